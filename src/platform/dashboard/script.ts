/**
 * The dashboard's script, served at `/dashboard/app.js` (the page's Content-Security-Policy
 * allows scripts from the router itself only). Plain browser JavaScript, no build step:
 * every value from the router is set as text (never as HTML), so a model or replica name
 * cannot inject markup. It polls `/routing` and `/metrics` with the token from
 * sessionStorage, draws what they say, and keeps the last CHART_POINTS polls of the
 * request counters to chart rates per model.
 */
export const DASHBOARD_JS = String.raw`"use strict";
(() => {
  const TOKEN_KEY = "switchyard.admin";
  const CHART_POINTS = 60;
  const REQUESTS = new Set(["switchyard_requests_total", "switchyard_routewise_model_requests_total", "switchyard_graph_requests_total"]);
  const DURATIONS = new Set(["switchyard_request_duration_seconds_sum", "switchyard_routewise_request_duration_seconds_sum", "switchyard_graph_request_duration_seconds_sum"]);
  const params = new URLSearchParams(location.search);
  const refreshMs = Math.min(60000, Math.max(250, Number(params.get("refresh_ms")) || 2000));
  const $ = (id) => document.getElementById(id);
  let timer = null;
  let previous = null; // the last poll's counters, for rates
  let generation = 0; // bumped by each poll and log-out: an older poll's answer is not drawn
  const series = new Map(); // model -> [{ok, err}] per second, oldest first

  function h(tag, attrs, ...children) {
    const el = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "class") el.className = v;
      else el.setAttribute(k, String(v));
    }
    for (const c of children.flat()) {
      if (c === null || c === undefined || c === false) continue;
      el.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return el;
  }
  const svg = (tag, attrs, ...children) => {
    const el = document.createElementNS("http://www.w3.org/2000/svg", tag);
    for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, String(v));
    for (const c of children.flat()) if (c) el.append(c instanceof Node ? c : document.createTextNode(String(c)));
    return el;
  };
  const table = (head, rows) => h("table", {}, h("thead", {}, h("tr", {}, head.map((t) => h("th", {}, t)))), h("tbody", {}, rows));
  const fill = (id, ...children) => $(id).replaceChildren(...children.flat());
  const num = (x, digits = 2) => (typeof x === "number" && isFinite(x) ? Number(x.toFixed(digits)).toString() : "–");
  const ago = (iso) => {
    if (!iso) return "–";
    const s = (Date.now() - Date.parse(iso)) / 1000;
    return s < 1 ? "now" : s < 120 ? Math.round(s) + " s ago" : Math.round(s / 60) + " min ago";
  };
  const secondsAgo = (ms) => (ms < 1000 ? "now" : Math.round(ms / 1000) + " s ago");
  const until = (iso) => (iso ? Math.max(0, Math.round((Date.parse(iso) - Date.now()) / 1000)) + " s" : "–");

  function parseMetrics(text) {
    const out = [];
    for (const line of text.split("\n")) {
      if (!line || line[0] === "#") continue;
      const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
      if (!m) continue;
      const labels = {};
      for (const l of (m[2] || "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]] = l[2].replace(/\\(.)/g, (_, c) => (c === "n" ? "\n" : c));
      out.push({ name: m[1], labels, value: Number(m[3]) });
    }
    return out;
  }
  const sum = (samples, name, where) => samples.filter((s) => s.name === name && (!where || where(s.labels))).reduce((a, s) => a + s.value, 0);

  function showLogin(message) {
    generation++;
    if (timer) clearTimeout(timer);
    timer = null;
    $("board").hidden = true;
    $("logout").hidden = true;
    $("login").hidden = false;
    $("error").textContent = message || "";
  }

  async function poll() {
    const token = sessionStorage.getItem(TOKEN_KEY);
    if (!token) return showLogin("");
    const mine = ++generation;
    if (timer) clearTimeout(timer);
    timer = null;
    const stale = () => mine !== generation;
    const headers = { authorization: "Bearer " + token };
    try {
      const [routing, metrics] = await Promise.all([fetch("/routing", { headers, cache: "no-store" }), fetch("/metrics", { headers, cache: "no-store" })]);
      if (stale()) return;
      if (routing.status === 401 || routing.status === 403) {
        sessionStorage.removeItem(TOKEN_KEY);
        return showLogin("The router refused this token.");
      }
      const view = await routing.json();
      const samples = metrics.ok ? parseMetrics(await metrics.text()) : [];
      if (stale()) return;
      $("login").hidden = true;
      $("board").hidden = false;
      $("logout").hidden = false;
      render(view, samples);
      $("updated").textContent = "updated " + new Date().toLocaleTimeString();
    } catch (e) {
      if (stale()) return;
      $("updated").textContent = "router unreachable: " + (e && e.message ? e.message : e);
    }
    timer = setTimeout(poll, refreshMs);
  }

  function render(view, samples) {
    renderConfig(view);
    const models = view.models || {};
    const entries = Object.entries(models);
    const graphModels = Object.entries(view.graphs || {}).flatMap(([g, v]) => (v.models || []).map((m) => [m, g]));
    fill("models", h("h2", {}, "Models"), table(["model", "target", "policy"], [
      ...entries.map(([name, m]) => h("tr", { "data-model": name }, h("td", {}, name), h("td", {}, m.router === "routewise" ? "RouteWise: " + m.routes.map((r) => r.id).join(", ") : "pool " + m.pool), h("td", {}, m.router === "routewise" ? "routewise" : m.policy || "weighted"))),
      ...graphModels.map(([name, g]) => h("tr", { "data-model": name }, h("td", {}, name), h("td", {}, "graph " + g), h("td", {}, "–"))),
    ]));
    renderCharts(samples);
    renderPools(entries.filter(([, m]) => m.router !== "routewise"));
    renderRouteWise(entries.filter(([, m]) => m.router === "routewise"), samples);
    renderGraphs(view.graphs || {});
  }

  function renderConfig(view) {
    const c = view.config;
    $("version").textContent = c ? "config " + c.version : "no config serving";
    const parts = [h("h2", {}, "Config")];
    parts.push(c ? h("p", { id: "serving" }, "Serving version ", h("code", {}, c.version), " from " + c.source + ", loaded " + ago(c.loaded_at)) : h("p", { class: "bad" }, "No config is serving."));
    if (view.rejected) {
      parts.push(h("div", { id: "rejected", class: "bad" }, h("p", {}, "Rejected version ", h("code", {}, view.rejected.version), " (" + ago(view.rejected.at) + "); still serving " + (view.rejected.serving || "nothing") + ":"),
        h("ul", {}, view.rejected.errors.map((e) => h("li", {}, h("code", {}, e.path), ": " + e.message)))));
    }
    if (view.read_error) parts.push(h("p", { class: "warn" }, "KV read failed: " + view.read_error));
    fill("config", parts);
  }

  function renderCharts(samples) {
    const now = Date.now();
    const counters = new Map();
    const of = (model) => counters.get(model) || counters.set(model, { ok: 0, err: 0, seconds: 0 }).get(model);
    for (const s of samples) {
      // Pool, RouteWise and graph models alike: requests by the status the client got, and Σ of their durations.
      if (DURATIONS.has(s.name)) of(s.labels.model).seconds += s.value;
      if (!REQUESTS.has(s.name)) continue;
      const c = of(s.labels.model);
      if (/^2/.test(s.labels.status || "")) c.ok += s.value;
      else c.err += s.value;
    }
    if (previous) {
      const dt = Math.max(0.001, (now - previous.at) / 1000);
      for (const [model, c] of counters) {
        const p = previous.counters.get(model) || { ok: 0, err: 0, seconds: 0 };
        // A counter that went down is an object that restarted: count from zero.
        const rise = (k) => (c[k] >= p[k] ? c[k] - p[k] : c[k]);
        const finished = rise("ok") + rise("err");
        const points = series.get(model) || [];
        // Mean latency of the requests that finished between two refreshes; none finished: no point.
        points.push({ ok: rise("ok") / dt, err: rise("err") / dt, ms: finished > 0 ? (rise("seconds") * 1000) / finished : null });
        if (points.length > CHART_POINTS) points.shift();
        series.set(model, points);
      }
    }
    previous = { at: now, counters };
    const pins = samples.find((s) => s.name === "switchyard_affinity_pins");
    const churn = sum(samples, "routing_affinity_events_total", (l) => l.event === "created" || l.event === "expired" || /^dropped/.test(l.event || ""));
    fill("charts", h("h2", {}, "Requests per second (ok / error) and mean latency per model"),
      h("p", { id: "pins" }, "Pins: " + (pins ? pins.value : "–") + "; pins created, expired or dropped since the objects started: " + churn),
      h("div", { class: "charts" }, [...series].map(([model, points]) => chart(model, points))));
  }

  function chart(model, points) {
    const W = 240, H = 60;
    const top = Math.max(1, ...points.map((p) => p.ok + p.err));
    const line = (f, color) => svg("polyline", { fill: "none", stroke: color, "stroke-width": 1.5, points: points.map((p, i) => (i * W) / (CHART_POINTS - 1) + "," + (H - (f(p) / top) * (H - 4) - 2)).join(" ") });
    const last = points[points.length - 1] || { ok: 0, err: 0, ms: null };
    const timed = points.map((p, i) => [i, p.ms]).filter(([, ms]) => ms !== null);
    const slowest = Math.max(1, ...timed.map(([, ms]) => ms));
    const latency = svg("polyline", { fill: "none", stroke: "#11763a", "stroke-width": 1.5, points: timed.map(([i, ms]) => (i * W) / (CHART_POINTS - 1) + "," + (H - (ms / slowest) * (H - 4) - 2)).join(" ") });
    const lastMs = timed.length ? timed[timed.length - 1][1] : null;
    return h("div", { class: "chart", "data-chart": model },
      h("div", {}, model + ": " + num(last.ok, 1) + " ok/s, " + num(last.err, 1) + " err/s"),
      svg("svg", { width: W, height: H, viewBox: "0 0 " + W + " " + H }, line((p) => p.ok, "#4f6bed"), line((p) => p.err, "#b00020")),
      h("div", { "data-latency": model }, "mean latency " + (lastMs === null ? "–" : num(lastMs, 0) + " ms") + (timed.length ? " (top of chart " + num(slowest, 0) + " ms)" : "")),
      svg("svg", { width: W, height: H, viewBox: "0 0 " + W + " " + H }, latency));
  }

  function renderPools(models) {
    const sections = [h("h2", {}, "Pools")];
    // /routing lists pools per model; several models may share one pool, shown once.
    const pools = new Map();
    for (const [name, m] of models) {
      const p = pools.get(m.pool) || { m, models: [] };
      p.models.push(name);
      pools.set(m.pool, p);
    }
    for (const [pool, { m, models: names }] of pools) {
      const rows = m.replicas.map((r) => {
        const s = r.state || {};
        const mt = s.metrics;
        return h("tr", { "data-replica": r.id, class: s.circuit ? "circuit-" + s.circuit : "" },
          h("td", {}, r.id), h("td", {}, r.weight), h("td", {}, h("span", { class: "bar", style: "width:" + Math.round(r.share * 80) + "px" }), " " + num(r.share * 100, 1) + "%"),
          h("td", { "data-circuit": s.circuit || "unknown", class: s.circuit === "open" ? "bad" : s.circuit === "half_open" ? "warn" : "ok" }, s.circuit || "–"),
          h("td", {}, s.circuit === "open" ? "reopens in " + until(s.reopen_at) : ""),
          h("td", {}, s.healthy === null || s.healthy === undefined ? "–" : s.healthy ? "healthy" : "unhealthy"),
          h("td", {}, num(s.inflight, 0)), // the pool object's sum over isolates, as /metrics' switchyard_inflight
          h("td", {}, mt ? "waiting " + num(mt.waiting, 0) + ", running " + num(mt.running, 0) + ", kv " + num(mt.kv_usage * 100, 0) + "%" : "–"),
          h("td", { class: mt && mt.stale ? "warn" : "", "data-scrape-age": r.id }, typeof s.scrape_age_ms === "number" ? secondsAgo(s.scrape_age_ms) + (mt && mt.stale ? " (stale)" : "") : mt ? ago(mt.sampled_at) : "–"),
          h("td", { class: "bad" }, s.scrape_error || ""),
          h("td", { "data-index": r.id }, indexCell(m.prefix_index, r.id)));
      });
      const ttft = m.ttft ? "TTFT fit over " + m.ttft.observations + " answers" : "";
      sections.push(h("div", { "data-pool": pool }, h("h3", {}, "pool " + pool + " (" + (m.policy || "weighted") + "), serving " + names.join(", ")), h("p", { class: "muted" }, "queued here: " + m.queued_here + (ttft ? "; " + ttft : "") + (hasSharedState(m) ? "" : "; shared state off: no circuits or health")),
        table(["replica", "weight", "share", "circuit", "", "health", "in flight", "engine", "metrics age", "scrape error", "prefix index"], rows)));
    }
    fill("pools", sections);
  }
  const hasSharedState = (m) => m.replicas.some((r) => r.state);
  // This isolate's prefix index for the replica (null for policies that read no prompts, or before its first request).
  const indexCell = (index, id) => {
    const r = index && index.replicas && index.replicas[id];
    return r ? r.blocks + " / " + r.capacity_blocks + " blocks (" + r.sized_by + ")" : "–";
  };

  function renderRouteWise(models, samples) {
    const sections = [h("h2", {}, "RouteWise")];
    for (const [name, m] of models) {
      const rows = m.routes.map((r) => h("tr", { "data-route": r.id },
        h("td", {}, r.id), h("td", {}, r.provider_type),
        h("td", { "data-fraction": r.fraction }, h("span", { class: "bar", style: "width:" + Math.round(r.fraction * 80) + "px" }), " " + num(r.fraction * 100, 1) + "%"),
        h("td", {}, r.feasible ? "" : r.why_not || "not feasible"),
        h("td", {}, num(r.expected_cost * 1e6, 3) + " per M req"),
        h("td", {}, r.quota ? num(r.quota.remaining, 0) + " / " + num(r.quota.limit, 0) + " " + r.quota.unit + (r.quota.fail_safe ? " (" + r.quota.fail_safe + ")" : "") : "–"),
        h("td", {}, r.concurrency ? (r.concurrency.limit - (r.concurrency.granted || 0)) + " / " + r.concurrency.limit + " free" : "–"),
        h("td", {}, r.envelope ? Object.entries(r.envelope.ttft_ms || {}).map(([p, ms]) => p + " " + ms).join(", ") + " ms (" + r.envelope.samples + " samples)" : "–"),
        h("td", { "data-spend": r.id }, num(sum(samples, "switchyard_routewise_spend_total", (l) => l.model === name && l.route === r.id), 6)),
        h("td", { class: r.cooling_down ? "bad" : "" }, r.cooling_down ? "cooling down" : "ok")));
      sections.push(h("div", { "data-routewise": name }, h("h3", {}, name),
        h("p", { class: "muted" }, "expected cost " + num(m.budget.expected_cost * 1e6, 3) + " per million requests (budget " + num(m.budget.limit * 1e6, 3) + (m.budget.met ? ", met" : ", not met") + "); " + (m.calibrated ? "calibrated" : "uncalibrated: " + m.uncalibrated_routes.join(", ")) + "; " + num(m.demand_rps, 2) + " req/s"),
        table(["route", "type", "split", "", "expected cost", "quota", "slots", "TTFT envelope", "spend", "state"], rows)));
    }
    if (models.length === 0) sections.push(h("p", { class: "muted" }, "No RouteWise models."));
    fill("routewise", sections);
  }

  function renderGraphs(graphs) {
    const sections = [h("h2", {}, "Graphs")];
    for (const [name, g] of Object.entries(graphs)) {
      const nodes = Object.entries(g.nodes);
      // Columns by depth from root: a node's steps that go to another node point one column right.
      const depth = new Map([["root", 0]]);
      for (let changed = true, guard = 0; changed && guard < 32; guard++) {
        changed = false;
        for (const [n, node] of nodes) for (const s of node.steps) {
          const to = /^node:/.test(s.target) ? s.target.slice(5) : null;
          if (to && depth.has(n) && !depth.has(to)) { depth.set(to, depth.get(n) + 1); changed = true; }
        }
      }
      const columns = [];
      for (const [n] of nodes) { const d = depth.has(n) ? depth.get(n) : 0; (columns[d] = columns[d] || []).push(n); }
      const BW = 320, BH = 28, GX = 60, GY = 16, LINE = 14;
      const pos = new Map();
      const heightOf = (n) => BH + LINE * g.nodes[n].steps.length;
      columns.forEach((col, d) => { let y = 10; for (const n of col) { pos.set(n, { x: 10 + d * (BW + GX), y }); y += heightOf(n) + GY; } });
      const W = 20 + columns.length * (BW + GX), H = 20 + Math.max(...columns.map((c) => c.reduce((a, n) => a + heightOf(n) + GY, 0)));
      const shapes = [];
      for (const [n, node] of nodes) {
        const p = pos.get(n);
        shapes.push(svg("rect", { x: p.x, y: p.y, width: BW, height: heightOf(n), rx: 4, fill: "#eef1fb", stroke: "#4f6bed" }));
        shapes.push(svg("text", { x: p.x + 6, y: p.y + 17, "font-weight": 600 }, n + " (" + node.routerType + ")"));
        node.steps.forEach((s, i) => {
          shapes.push(svg("text", { x: p.x + 10, y: p.y + BH + LINE * i + 8, "font-size": 11 }, s.step + " → " + s.target));
          const to = /^node:/.test(s.target) ? pos.get(s.target.slice(5)) : null;
          if (to) shapes.push(svg("line", { x1: p.x + BW, y1: p.y + BH + LINE * i + 4, x2: to.x, y2: to.y + 14, stroke: "#555" }));
        });
      }
      const runs = g.recent_runs || [];
      sections.push(h("div", { "data-graph": name }, h("h3", {}, name + " (" + g.path + ")"), svg("svg", { width: W, height: H, viewBox: "0 0 " + W + " " + H, "font-family": "system-ui,sans-serif", "font-size": 12 }, shapes),
        h("p", { class: "muted" }, runs.length ? "Last runs here, newest first (route through nodes and steps):" : "No runs in the isolate that answered yet."),
        h("ul", {}, runs.map((r) => h("li", { "data-run": r.route.join(","), class: r.status >= 400 ? "bad" : "" }, ago(r.at) + ": " + r.route.join(" → ") + " (" + r.status + ")")))));
    }
    if (Object.keys(graphs).length === 0) sections.push(h("p", { class: "muted" }, "No graphs."));
    fill("graphs", sections);
  }

  $("login").addEventListener("submit", (e) => {
    e.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, $("token").value);
    $("token").value = "";
    $("error").textContent = "";
    poll();
  });
  $("logout").addEventListener("click", () => {
    sessionStorage.removeItem(TOKEN_KEY);
    showLogin("");
  });
  if (sessionStorage.getItem(TOKEN_KEY)) poll();
})();
`;
