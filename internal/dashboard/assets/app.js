// marina dashboard: draws /api/snapshot, and /api/doctor on demand.
// Every value comes from the lab (Service names, labels, addresses): it is
// only ever put on the page as text (textContent, SVG text, attribute
// values set one by one), never as HTML.
"use strict";

const REFRESH_MS = 5000;
const SVG = "http://www.w3.org/2000/svg";

// el makes an HTML element; attrs are set as attributes, children are
// nodes or text.
function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v !== undefined && v !== null) e.setAttribute(k, String(v));
  }
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

// svg makes an SVG element the same way.
function svg(tag, attrs, ...children) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v !== undefined && v !== null) e.setAttribute(k, String(v));
  }
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

// link is an <a> to url when it is an http(s) URL, plain text otherwise.
function link(url, text) {
  if (typeof url === "string" && /^https?:\/\//.test(url)) {
    return el("a", { href: url, target: "_blank", rel: "noopener noreferrer" }, text || url);
  }
  return document.createTextNode(text || "");
}

function bytes(n) {
  if (typeof n !== "number" || n < 0) return "-";
  const units = ["B", "kB", "MB", "GB", "TB"];
  let i = 0;
  while (n >= 1000 && i < units.length - 1) { n /= 1000; i++; }
  return (i === 0 ? n : n.toFixed(1)) + " " + units[i];
}

function table(headers, rows, empty) {
  if (!rows.length) return el("p", { class: "muted" }, empty);
  return el("div", { class: "table-wrap" },
    el("table", {},
      el("thead", {}, el("tr", {}, headers.map((h) => el("th", { scope: "col" }, h)))),
      el("tbody", {}, rows.map((r) => el("tr", {}, r.map((c) => el("td", {}, c)))))));
}

function replace(id, ...nodes) {
  document.getElementById(id).replaceChildren(...nodes.flat());
}

// summary: the VM and the route, in one line.
function renderSummary(snap) {
  const st = snap.status;
  if (!st) {
    say("The lab could not be read: " + ((snap.errors || {}).status || "unknown error"));
    return;
  }
  const vm = st.vm || {};
  const parts = [];
  if (vm.status === "Running") {
    parts.push("VM " + vm.name + " running, lima0 " + (vm.lima0 || "?") + ", Docker " + (vm.docker || "?"));
  } else if (vm.status === "NotCreated") {
    parts.push("VM " + vm.name + " not created: marina up creates it");
  } else {
    parts.push("VM " + vm.name + " " + vm.status + ": marina up starts it");
  }
  const clusters = snap.clusters || [];
  parts.push(clusters.length + (clusters.length === 1 ? " cluster" : " clusters"));
  if (st.configError) parts.push("the config is invalid (marina config edit fixes it): " + st.configError);
  say(parts.join(" · "));
  replace("updated", "Updated " + new Date(snap.time).toLocaleTimeString() + "; refreshes every " + REFRESH_MS / 1000 + " s.");
}

// renderTopology draws the Mac, its route, the VM, the kind network and
// what is on it as SVG.
function renderTopology(snap) {
  const st = snap.status || {};
  const vm = st.vm || {};
  const route = st.route || {};
  const clusters = snap.clusters || [];
  const mirrors = snap.registries || [];
  const details = {};
  for (const d of snap.services || []) details[d.cluster] = d;
  const perRow = 4, cw = 250, ch = 78, gap = 16;
  const rows = Math.max(1, Math.ceil(clusters.length / perRow));
  const width = 40 + perRow * (cw + gap);
  const bridgeY = 250;
  const height = bridgeY + 40 + rows * (ch + gap) + 10;
  const s = svg("svg", { viewBox: "0 0 " + width + " " + height, role: "img", "aria-labelledby": "topology-title" });
  s.append(svg("title", { id: "topology-title" }, "Topology: the Mac, its route to the kind network through the VM, and the clusters, DNS server and mirrors on that network"));

  // The VM, around the kind network.
  s.append(svg("rect", { x: 10, y: 96, width: width - 20, height: height - 106, rx: 10, class: "vm" }));
  s.append(svg("text", { x: 230, y: 118 }, "VM " + (vm.name || "") + " (" + (vm.status || "?") + ")"));
  s.append(svg("text", { x: 230, y: 138, class: "small" }, "lima0 " + (vm.lima0 || "-") + (vm.docker ? " · Docker " + vm.docker : "")));

  // The Mac, and its route down through lima0 to the kind network.
  const routeOK = route.state === "present" && !route.error;
  s.append(svg("rect", { x: 20, y: 16, width: 190, height: 56, rx: 8 }));
  s.append(svg("text", { x: 34, y: 40 }, "Mac"));
  s.append(svg("text", { x: 34, y: 60, class: "small" }, routeOK ? "route ok" : "route " + (route.state || "unknown")));
  s.append(svg("line", { x1: 115, y1: 72, x2: 115, y2: bridgeY, class: routeOK ? "ok" : "fail" }));
  s.append(svg("text", { x: 124, y: 118, class: "small" }, route.cidr || ""));
  s.append(svg("text", { x: 124, y: 134, class: "small" }, "via lima0"));

  // Shared services above the kind network: the DNS server and the mirrors.
  const shared = [];
  if (st.dns) {
    const cs = st.dns.containers || [];
    shared.push({ name: "DNS " + (st.dns.domain || ""), detail: cs.map((c) => c.ip).filter(Boolean).join(", "), ok: cs.length > 0 && cs.every((c) => c.state === "running") });
  }
  for (const m of mirrors) {
    shared.push({ name: m.name, detail: m.push ? "push registry" : (m.upstream || ""), ok: m.state === "running" });
  }
  const sw = 190, sx0 = 230;
  const fit = Math.max(1, Math.floor((width - sx0 - 20) / (sw + 10)));
  shared.slice(0, fit).forEach((b, i) => {
    const x = sx0 + i * (sw + 10);
    s.append(svg("rect", { x: x, y: 150, width: sw, height: 50, rx: 6, class: b.ok ? "running" : "stopped" }));
    s.append(svg("text", { x: x + 10, y: 170 }, b.name));
    s.append(svg("text", { x: x + 10, y: 190, class: "small" }, b.detail));
    s.append(svg("line", { x1: x + sw / 2, y1: 200, x2: x + sw / 2, y2: bridgeY }));
  });
  if (shared.length > fit) {
    s.append(svg("text", { x: sx0, y: 220, class: "small" }, "and " + (shared.length - fit) + " more (Registries, below)"));
  }

  // The kind network, and the clusters below it.
  s.append(svg("line", { x1: 30, y1: bridgeY, x2: width - 30, y2: bridgeY, class: "bridge" }));
  s.append(svg("text", { x: 30, y: bridgeY + 22, class: "small" }, "kind network " + (snap.kindNetwork || route.cidr || "")));
  clusters.forEach((c, i) => {
    const d = details[c.name] || {};
    const state = stateOf(snap, c);
    const x = 30 + (i % perRow) * (cw + gap);
    const y = bridgeY + 40 + Math.floor(i / perRow) * (ch + gap);
    s.append(svg("line", { x1: x + cw / 2, y1: bridgeY, x2: x + cw / 2, y2: y }));
    s.append(svg("rect", { x: x, y: y, width: cw, height: ch, rx: 8, class: state }));
    s.append(svg("text", { x: x + 10, y: y + 22 }, c.name));
    s.append(svg("text", { x: x + 10, y: y + 42, class: "small" }, "slot " + c.num + " · " + state + " · " + c.nodes + (c.nodes === 1 ? " node" : " nodes")));
    s.append(svg("text", { x: x + 10, y: y + 62, class: "small" }, "svc " + (d.serviceRange || "-") + " · pods " + (d.podRange || "-")));
  });
  replace("topology", s);
}

// stateOf is a cluster's state as status says it (running, partial: a
// node is not running, or stopped), else as its list row does.
function stateOf(snap, c) {
  for (const sc of (snap.status || {}).clusters || []) if (sc.name === c.name) return sc.state;
  return c.state;
}

// vmDown says why nothing in the VM can be read, when the VM does not
// run: the sections say so instead of their errors.
function vmDown(snap) {
  const vm = (snap.status || {}).vm;
  if (!vm || vm.status === "Running") return "";
  return vm.status === "NotCreated" ? "VM " + vm.name + " not created: marina up creates it." : "VM " + vm.name + " not running (" + vm.status + "): marina up starts it.";
}

function renderClusters(snap) {
  const clusters = snap.clusters || [];
  if (vmDown(snap)) {
    replace("clusters", el("p", { class: "muted" }, vmDown(snap)));
    return;
  }
  if (!clusters.length) {
    const why = (snap.errors || {}).clusters;
    replace("clusters", el("p", { class: "muted" }, why ? "The clusters could not be read: " + why : "No clusters: marina cluster create NAME makes one."));
    return;
  }
  const details = {};
  for (const d of snap.services || []) details[d.cluster] = d;
  replace("clusters", clusters.map((c) => clusterCard(c, details[c.name] || {}, stateOf(snap, c))));
}

function clusterCard(c, d, state) {
  const labels = d.labels || [];
  const up = state === "running" || state === "partial";
  const card = el("article", { class: "card", "data-cluster": c.name },
    el("h3", {}, c.name, " ", el("span", { class: state === "running" ? "ok" : state === "partial" ? "warn" : "off" }, "(" + state + ")")));
  const dl = el("dl", {},
    el("dt", {}, "Slot"), el("dd", {}, String(c.num)),
    el("dt", {}, "API"), el("dd", {}, d.api || (c.apiPort ? "port " + c.apiPort : "-")),
    el("dt", {}, "Nodes"), el("dd", {}, d.nodes ? d.ready + " of " + d.nodes + " Ready" : String(c.nodes)),
    el("dt", {}, "Version"), el("dd", {}, d.version || "-"),
    el("dt", {}, "Ranges"), el("dd", {}, "services " + (d.serviceRange || "-") + ", pods " + (d.podRange || "-")),
    el("dt", {}, "Pool"), el("dd", {}, (d.pool || []).join(", ") + (up ? " (" + (d.poolUsed || 0) + " of " + (d.poolSize || 0) + " used)" : "")),
    el("dt", {}, "Kubeconfig"), el("dd", {}, c.kubeconfigPath || "-"));
  card.append(dl);
  if (labels.length) {
    card.append(el("div", { class: "labels" }, labels.map((l) => el("span", { class: "tag" }, l))));
  }
  if (!up) {
    card.append(el("p", { class: "muted" }, "Cluster stopped: marina cluster start " + c.name + " starts it."));
    return card;
  }
  if (state === "partial") {
    card.append(el("p", { class: "warn" }, "A node of it is not running: marina cluster start " + c.name + " starts it."));
  }
  if (d.error) card.append(el("p", { class: "fail" }, d.error));
  const lbs = d.loadBalancers || [];
  if (!lbs.length) {
    card.append(el("p", { class: "muted" }, "No LoadBalancer Services."));
    return card;
  }
  card.append(el("h4", {}, "LoadBalancer Services"));
  card.append(el("ul", {}, lbs.map((lb) => el("li", { "data-service": lb.namespace + "/" + lb.name },
    el("span", {}, lb.namespace + "/" + lb.name + " "),
    el("span", { class: "muted" }, ((lb.addresses || []).length ? lb.addresses.join(", ") : "pending") + " " + (lb.ports || []).map((p) => p.port + "/" + p.protocol).join(", ")),
    (lb.urls || []).length ? el("div", {}, lb.urls.map((u) => [link(u), " "])) : (lb.dnsName ? el("div", {}, lb.dnsName) : null)))));
  return card;
}

function renderRegistries(snap) {
  const why = (snap.errors || {}).registries;
  const rows = (snap.registries || []).map((m) => {
    const hits = m.blobs ? m.blobs.hits : null, misses = m.blobs ? m.blobs.misses : null;
    const ratio = hits !== null && hits + misses > 0 ? Math.round((100 * hits) / (hits + misses)) + "% (" + hits + "/" + (hits + misses) + ")" : "-";
    return [m.name, m.push ? "push: " + (m.host || "") : m.upstream, el("span", { class: m.state === "running" ? "ok" : "warn" }, m.state), bytes(m.cacheBytes), ratio];
  });
  replace("registries", why ? el("p", { class: "fail" }, "The registries could not be read: " + why) : table(["Name", "Upstream", "State", "Cache", "Blob hits"], rows, "No mirrors."));
}

function renderDNS(snap) {
  if (vmDown(snap)) {
    replace("dns", el("p", { class: "muted" }, vmDown(snap)));
    return;
  }
  const why = (snap.errors || {}).dns;
  const rows = (snap.dns || []).map((r) => [r.name, r.address, r.cluster + (r.stopped ? " (stopped)" : ""), r.owner || "-"]);
  replace("dns", why ? el("p", { class: "fail" }, "The names could not be read: " + why) : table(["Name", "Address", "Cluster", "Owner"], rows, "No names yet: a LoadBalancer Service with an address gets one within seconds."));
}

function renderFleets(snap) {
  const fleets = snap.fleets || [];
  if (!fleets.length) {
    replace("fleets", el("p", { class: "muted" }, "No fleets: marina fleet apply -f FILE makes one."));
    return;
  }
  replace("fleets", fleets.map((f) => el("div", { class: "card fleet", "data-fleet": f.name }, el("h3", {}, f.name), fleetGraph(f))));
}

// fleetGraph draws a fleet's clusters in columns by how deep their
// dependencies go, each arrow from a cluster to one that depends on it
// (created after it, stopped before it).
function fleetGraph(f) {
  const members = f.clusters || [];
  const deps = f.dependsOn || {};
  const depth = {};
  const level = (n, seen) => {
    if (depth[n] !== undefined) return depth[n];
    if (seen.has(n)) return 0; // a circle: fleet apply refuses them, a hand-edited file may not
    seen.add(n);
    let d = 0;
    for (const p of deps[n] || []) if (members.includes(p)) d = Math.max(d, level(p, seen) + 1);
    depth[n] = d;
    return d;
  };
  members.forEach((n) => level(n, new Set()));
  const cols = [];
  for (const n of members) (cols[depth[n]] = cols[depth[n]] || []).push(n);
  const bw = 150, bh = 34, gx = 60, gy = 14;
  const rows = Math.max(1, ...cols.map((c) => (c || []).length));
  const width = Math.max(1, cols.length) * (bw + gx) - gx + 20, height = rows * (bh + gy) - gy + 20;
  const at = {};
  cols.forEach((c, i) => (c || []).forEach((n, j) => { at[n] = { x: 10 + i * (bw + gx), y: 10 + j * (bh + gy) }; }));
  const s = svg("svg", { class: "graph", viewBox: "0 0 " + width + " " + height, width: width, role: "img", "aria-label": "fleet " + f.name + ": " + members.map((n) => (deps[n] || []).length ? n + " depends on " + deps[n].join(", ") : n).join("; ") },
    svg("defs", {}, svg("marker", { id: "arrow-" + members.length + "-" + width, viewBox: "0 0 10 10", refX: 10, refY: 5, markerWidth: 6, markerHeight: 6, orient: "auto-start-reverse" }, svg("path", { d: "M 0 0 L 10 5 L 0 10 z", class: "arrowhead" }))));
  const marker = "url(#arrow-" + members.length + "-" + width + ")";
  for (const n of members) {
    for (const p of deps[n] || []) {
      if (!at[p]) continue;
      s.append(svg("line", { x1: at[p].x + bw, y1: at[p].y + bh / 2, x2: at[n].x, y2: at[n].y + bh / 2, "marker-end": marker, class: "edge" }));
    }
  }
  for (const n of members) {
    s.append(svg("rect", { x: at[n].x, y: at[n].y, width: bw, height: bh, rx: 6 }));
    s.append(svg("text", { x: at[n].x + 10, y: at[n].y + 22 }, n));
  }
  return el("div", { class: "graph-wrap" }, s);
}

async function refresh() {
  let snap;
  try {
    const r = await fetch("/api/snapshot", { cache: "no-store" });
    if (!r.ok) throw new Error("the server answered " + r.status);
    snap = await r.json();
  } catch (e) {
    say("The dashboard server did not answer (" + e.message + "): is marina dashboard still running?");
  }
  if (snap) {
    try {
      renderSummary(snap);
      renderTopology(snap);
      renderClusters(snap);
      renderRegistries(snap);
      renderDNS(snap);
      renderFleets(snap);
    } catch (e) {
      console.error(e); // a bug of the page's: its tests fail on it
      say("The page could not draw what the server sent (" + e.message + "): please report it, with marina logs.");
    }
  }
  setTimeout(refresh, REFRESH_MS);
}

// say puts text in the live summary, only when it changed: a screen
// reader reads each change.
function say(text) {
  const e = document.getElementById("summary");
  if (e.textContent !== text) e.textContent = text;
}

async function runDoctor() {
  const b = document.getElementById("run-doctor");
  b.disabled = true;
  replace("doctor", el("p", { class: "muted" }, "Running doctor…"));
  try {
    const r = await fetch("/api/doctor", { cache: "no-store" });
    if (!r.ok) {
      const why = await r.text();
      let msg = "the server answered " + r.status;
      try { msg = JSON.parse(why).error || msg; } catch (_) { msg += ": " + why; }
      throw new Error(msg);
    }
    const rep = await r.json();
    const sum = rep.summary || {};
    replace("doctor",
      el("p", {}, (sum.ok || 0) + " ok, " + (sum.warn || 0) + " warnings, " + (sum.fail || 0) + " failed"),
      (rep.checks || []).map((c) => el("div", { class: "check" },
        el("span", { class: c.status === "ok" ? "ok" : c.status === "fail" ? "fail" : c.status === "warn" ? "warn" : "off" }, c.status), " ",
        el("strong", {}, c.name), " ", c.finding,
        c.fix ? el("span", { class: "fix" }, "Fix: " + c.fix) : null)));
  } catch (e) {
    replace("doctor", el("p", { class: "fail" }, "Doctor could not run: " + e.message));
  }
  b.disabled = false;
}

document.getElementById("run-doctor").addEventListener("click", runDoctor);
refresh();
