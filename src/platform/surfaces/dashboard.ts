import { DASHBOARD_HTML } from "../dashboard/page";
import { DASHBOARD_JS } from "../dashboard/script";

/**
 * The page may run only the router's own script and talk only to the router; it may not
 * be framed, post forms anywhere or load anything else. No inline script, so an injected
 * `<script>` could not run even if a value reached the page as markup.
 */
const SECURITY_HEADERS = {
  "content-security-policy":
    "default-src 'none'; script-src 'self'; style-src 'unsafe-inline'; connect-src 'self'; img-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "cache-control": "no-store",
};

/** `GET /dashboard`: the page (docs/dashboard.md). */
export function dashboardPage(): Response {
  return new Response(DASHBOARD_HTML, { headers: { ...SECURITY_HEADERS, "content-type": "text/html; charset=utf-8" } });
}

/** `GET /dashboard/app.js`: its script. */
export function dashboardScript(): Response {
  return new Response(DASHBOARD_JS, { headers: { ...SECURITY_HEADERS, "content-type": "text/javascript; charset=utf-8" } });
}

/** `GET /favicon.ico`: nothing, said at once, so a browser showing the dashboard logs no failed load. */
export function dashboardIcon(): Response {
  return new Response(null, { status: 204, headers: { "cache-control": "max-age=86400" } });
}
