/**
 * The dashboard's page: a login form and empty sections that ./script.ts fills from
 * `GET /routing` and `GET /metrics`. It holds no data, so it is served without the admin
 * token; everything it shows needs the token, which the page keeps in sessionStorage
 * (this tab only, gone when it closes) and sends as a Bearer token.
 */
export const DASHBOARD_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Switchyard</title>
<style>
[hidden]{display:none!important}
body{font:14px/1.4 system-ui,sans-serif;margin:0;color:#1d2330;background:#f4f5f8}
header{display:flex;gap:1em;align-items:center;padding:.6em 1em;background:#1d2330;color:#fff}
header h1{font-size:1.1em;margin:0}
header .grow{flex:1}
main{padding:1em;display:grid;gap:1em}
section{background:#fff;border-radius:6px;padding:.8em 1em;box-shadow:0 1px 2px #0002}
h2{font-size:1em;margin:0 0 .5em}
table{border-collapse:collapse;width:100%}
th,td{text-align:left;padding:.2em .5em;border-bottom:1px solid #e4e6ec;white-space:nowrap}
th{font-weight:600;color:#555}
.bad{color:#b00020}.ok{color:#11763a}.warn{color:#9a6400}.muted{color:#777}
.circuit-open{background:#fde2e5}.circuit-half_open{background:#fff3d6}
.bar{display:inline-block;height:.7em;background:#4f6bed;vertical-align:middle}
.charts{display:flex;flex-wrap:wrap;gap:1em}
.chart{font-size:12px}.chart svg{display:block;background:#f8f9fb;border:1px solid #e4e6ec}
form#login{max-width:22em;margin:4em auto;display:grid;gap:.6em}
input,button{font:inherit;padding:.4em .6em}
#error{min-height:1.2em}
</style>
<script src="/dashboard/app.js" defer></script>
</head>
<body>
<header><h1>Switchyard</h1><span id="version" class="muted"></span><span class="grow"></span><span id="updated" class="muted"></span><button id="logout" hidden>Log out</button></header>
<form id="login">
<label for="token">Admin token</label>
<input id="token" name="token" type="password" autocomplete="current-password" required>
<button type="submit">Log in</button>
<div id="error" class="bad" role="alert"></div>
</form>
<main id="board" hidden>
<section id="config"></section>
<section id="models"></section>
<section id="charts"></section>
<section id="pools"></section>
<section id="routewise"></section>
<section id="graphs"></section>
</main>
</body>
</html>
`;
