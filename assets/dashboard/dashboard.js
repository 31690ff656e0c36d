// The Queen dashboard: polls the broker's HTTP API every few seconds and
// renders what it answers. Plain DOM, no framework, no build step. Every
// value from the broker goes in through textContent (never innerHTML):
// payloads and names are user data.
"use strict";

/** How often the page refreshes, in milliseconds. */
const REFRESH_MS = 5000;
/** Queues (and groups) shown with their partitions: bounded work per refresh. */
const MAX_DETAILED = 20;
/** Dead letters shown per queue. */
const DLQ_LIMIT = 10;
/** Partitions a lookup tries. */
const MAX_LOOKUP_PARTITIONS = 64;

/** GETs `path` and parses its JSON; throws with the status on failure. */
async function api(path) {
  const response = await fetch(path, { headers: { accept: "application/json" } });
  if (!response.ok) throw new Error(`${path}: HTTP ${response.status}`);
  return response.json();
}

/** Builds an element: `el("td", {class: "num"}, "12")`. */
function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, value);
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

/** A table with a header row and one row per item. */
function table(columns, rows, id) {
  const head = el("tr", {}, columns.map((c) => el("th", c.num ? { class: "num" } : {}, c.title)));
  const body = rows.map((row) =>
    el("tr", {}, columns.map((c) => el("td", c.num ? { class: "num" } : {}, c.value(row)))));
  return el("table", id ? { id } : {}, el("thead", {}, head), el("tbody", {}, body));
}

/** Replaces the content of the element `id`. */
function fill(id, ...children) {
  document.getElementById(id).replaceChildren(...children.flat(Infinity));
}

function json(value) {
  return el("pre", {}, typeof value === "string" ? value : JSON.stringify(value, null, 1));
}

// --- brokers and throughput -------------------------------------------------

function renderBrokers(answer) {
  document.getElementById("cluster").textContent =
    `cluster ${answer.clusterId} · broker ${answer.nodeId}`;
  const rows = answer.brokers;
  document.getElementById("brokers").replaceChildren(
    ...table([
      { title: "id", value: (b) => b.id },
      { title: "address", value: (b) => `${b.host}:${b.port}` },
      { title: "", value: (b) => (b.self ? el("span", { class: "badge" }, "this one") : "") },
    ], rows).childNodes);
}

const SERIES = [
  { door: "kafka", field: "recordsIn", label: "Kafka in", color: "#1d4ea8" },
  { door: "kafka", field: "recordsOut", label: "Kafka out", color: "#60a5fa" },
  { door: "http", field: "recordsIn", label: "HTTP in", color: "#7a3eb1" },
  { door: "http", field: "recordsOut", label: "HTTP out", color: "#d8b4fe" },
];

/** An SVG line chart of records per second, the last 15 minutes. */
function renderThroughput(answer) {
  const width = 900, height = 160, pad = 30;
  const points = answer.windowSeconds / answer.intervalSeconds;
  const rate = (s, series) => s[series.door][series.field] / answer.intervalSeconds;
  const max = Math.max(1, ...answer.samples.flatMap((s) => SERIES.map((x) => rate(s, x))));
  const ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  svg.setAttribute("width", "100%");
  const add = (tag, attrs, text) => {
    const node = document.createElementNS(ns, tag);
    for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
    if (text !== undefined) node.textContent = text;
    svg.append(node);
  };
  add("line", { x1: pad, y1: height - pad, x2: width, y2: height - pad, stroke: "#ccc" });
  add("text", { x: 0, y: 12 }, max.toFixed(max < 10 ? 1 : 0));
  add("text", { x: 0, y: height - pad }, "0");
  add("text", { x: pad, y: height - 8 }, "15 min ago");
  add("text", { x: width - 30, y: height - 8 }, "now");
  // The newest sample sits at the right edge; older ones step left.
  const x = (i) => width - (answer.samples.length - 1 - i) * ((width - pad) / (points - 1));
  const y = (v) => height - pad - (v / max) * (height - pad - 16);
  for (const series of SERIES) {
    const line = answer.samples.map((s, i) => `${x(i).toFixed(1)},${y(rate(s, series)).toFixed(1)}`);
    add("polyline", { points: line.join(" "), fill: "none", stroke: series.color, "stroke-width": 2 });
  }
  const last = answer.samples[answer.samples.length - 1];
  const legend = el("div", { class: "legend" }, SERIES.map((s) =>
    el("span", { style: `color:${s.color}` }, `■ ${s.label} ${last ? rate(last, s).toFixed(1) : 0}/s`)));
  fill("throughput", svg, legend,
    answer.samples.length ? [] : el("p", { class: "muted" }, "the first point comes after a few seconds"));
}

// --- queues and topics ------------------------------------------------------

/** The options that differ from nothing at all, as `key=value` lines. */
function optionsList(options) {
  const { topicConfigs, ...native } = options;
  const configs = Object.entries(topicConfigs || {});
  return [
    el("details", {}, el("summary", {}, "options"),
      json(Object.entries(native).map(([k, v]) => `${k}=${v}`).join("\n"))),
    el("div", {}, el("span", { class: "muted" }, "Kafka configs set: "),
      configs.length ? configs.map(([k, v]) => `${k}=${v}`).join(", ") : "none (defaults)"),
  ];
}

function renderQueue(queue) {
  const partitions = table([
    { title: "partition", value: (p) => p.name },
    { title: "Kafka index", num: true, value: (p) => p.kafkaIndex },
    { title: "log start", num: true, value: (p) => p.logStartOffset },
    { title: "high watermark", num: true, value: (p) => p.nextOffset },
    { title: "depth", num: true, value: (p) => p.stats.pending + p.stats.processing },
    { title: "processing", num: true, value: (p) => p.stats.processing },
    { title: "dead letters", num: true, value: (p) => p.stats.deadLetter },
    { title: "newest", value: (p) => p.newestMessage || "" },
  ], queue.partitions);
  return el("div", { class: "queue", "data-queue": queue.name },
    el("h3", {}, queue.name, " ",
      el("span", { class: "muted" }, `${queue.partitions.length} partition(s), ${queue.totals.total} stored`)),
    partitions, optionsList(queue.options));
}

// --- consumer groups --------------------------------------------------------

function renderGroups(groups, kafkaGroups, positions) {
  const kafka = new Map(kafkaGroups.groups.map((g) => [g.name, g]));
  const summary = table([
    { title: "group", value: (g) => g.name },
    { title: "kind", value: (g) => kafka.has(g.name)
        ? el("span", { class: "badge kafka" }, `Kafka · ${kafka.get(g.name).state}`)
        : el("span", { class: "badge native" }, "native") },
    { title: "queue / topic", value: (g) => g.queueName },
    { title: "members", value: (g) => kafka.has(g.name)
        ? kafka.get(g.name).members.map((m) => `${m.clientId}@${m.clientHost}`).join(", ") || "none"
        : `${g.members} leased` },
    { title: "lag", num: true, value: (g) => el("span", g.totalLag > 0 ? { class: "lag" } : {}, g.totalLag) },
    { title: "partitions lagging", num: true, value: (g) => g.partitionsWithLag },
    { title: "oldest unconsumed (s)", num: true, value: (g) => g.maxTimeLag },
  ], groups, "group-list");
  const details = [...positions].map(([group, queues]) =>
    Object.entries(queues).map(([queue, { partitions }]) =>
      el("div", { class: "positions" }, el("h3", {}, `${group} on ${queue}`), table([
        { title: "partition", value: (p) => p.partition },
        { title: "committed offset", num: true, value: (p) => p.committedOffset },
        { title: "lag", num: true, value: (p) => p.offsetLag },
        { title: "lease", value: (p) => (p.leaseActive ? "active" : "") },
        { title: "last consumed", value: (p) => p.lastConsumedAt },
      ], partitions))));
  // Kafka groups with members but no committed offset yet show too.
  const unlisted = kafkaGroups.groups.filter((g) => !groups.some((x) => x.name === g.name));
  fill("groups", groups.length || unlisted.length ? summary : el("p", { class: "muted" }, "no consumer groups"),
    unlisted.map((g) => el("p", {}, el("span", { class: "badge kafka" }, `Kafka · ${g.state}`),
      ` ${g.name}: ${g.members.length} member(s), no committed offsets`)),
    details);
}

// --- dead letters -----------------------------------------------------------

function renderDlq(pages) {
  if (!pages.length) {
    fill("dlq", el("p", { class: "muted" }, "no dead letters"));
    return;
  }
  fill("dlq", pages.map(({ queue, page }) => [
    el("h3", {}, `${queue} `, el("span", { class: "muted" }, `${page.total} dead letter(s)`)),
    table([
      { title: "transaction id", value: (m) => m.transactionId },
      { title: "partition", value: (m) => m.partition },
      { title: "group", value: (m) => m.consumerGroup },
      { title: "error", value: (m) => m.errorMessage || "" },
      { title: "retries", num: true, value: (m) => m.retryCount },
      { title: "failed at", value: (m) => m.failedAt },
      { title: "payload", value: (m) => json(m.data) },
    ], page.messages),
  ]));
}

// --- message lookup ---------------------------------------------------------

/** Tries each partition of `queue` (a bounded number) for `tx`. */
async function lookup(queue, tx) {
  fill("lookup-result", el("p", { class: "muted" }, "looking…"));
  try {
    const detail = await api(`/api/v1/resources/queues/${encodeURIComponent(queue)}`);
    for (const p of detail.partitions.slice(0, MAX_LOOKUP_PARTITIONS)) {
      const response = await fetch(`/api/v1/messages/${p.id}/${encodeURIComponent(tx)}`);
      if (response.ok) {
        fill("lookup-result", json(await response.json()));
        return;
      }
    }
    fill("lookup-result", el("p", {}, `no message ${tx} in ${queue}`));
  } catch (e) {
    fill("lookup-result", el("p", { class: "error" }, String(e)));
  }
}

/** The form: looks up, and keeps the question in the address (`#lookup/queue/id`). */
function submitLookup(event) {
  event.preventDefault();
  const queue = document.getElementById("lookup-queue").value;
  const tx = document.getElementById("lookup-tx").value.trim();
  history.replaceState(null, "", `#lookup/${encodeURIComponent(queue)}/${encodeURIComponent(tx)}`);
  lookup(queue, tx);
}

/** A lookup named in the address, run once the queues are listed. */
function lookupFromAddress() {
  const match = /^#lookup\/([^/]+)\/(.+)$/.exec(location.hash);
  if (!match) return;
  const [queue, tx] = [decodeURIComponent(match[1]), decodeURIComponent(match[2])];
  document.getElementById("lookup-queue").value = queue;
  document.getElementById("lookup-tx").value = tx;
  lookup(queue, tx);
}

function renderLookupQueues(names) {
  const select = document.getElementById("lookup-queue");
  const current = select.value;
  select.replaceChildren(...names.map((n) => el("option", { value: n }, n)));
  if (names.includes(current)) select.value = current;
}

// --- the refresh loop -------------------------------------------------------

async function refresh() {
  const [brokers, throughput, queues, groups, kafkaGroups] = await Promise.all([
    api("/api/v1/brokers"),
    api("/api/v1/throughput"),
    api("/api/v1/resources/queues"),
    api("/api/v1/consumer-groups"),
    api("/api/v1/kafka/groups"),
  ]);
  renderBrokers(brokers);
  renderThroughput(throughput);
  const names = queues.queues.map((q) => q.name).sort();
  renderLookupQueues(names);
  const shown = names.slice(0, MAX_DETAILED);
  const details = await Promise.all(shown.map((n) => api(`/api/v1/resources/queues/${encodeURIComponent(n)}`)));
  fill("queues", details.length ? details.map(renderQueue) : el("p", { class: "muted" }, "no queues yet"),
    names.length > shown.length ? el("p", { class: "muted" }, `${names.length - shown.length} more not shown`) : []);
  const groupNames = [...new Set(groups.map((g) => g.name))].slice(0, MAX_DETAILED);
  const described = await Promise.all(groupNames.map((g) => api(`/api/v1/consumer-groups/${encodeURIComponent(g)}`)));
  renderGroups(groups, kafkaGroups, new Map(groupNames.map((g, i) => [g, described[i]])));
  const withLetters = details.filter((q) => q.totals.deadLetter > 0);
  const pages = await Promise.all(withLetters.map(async (q) => ({
    queue: q.name,
    page: await api(`/api/v1/dlq?queue=${encodeURIComponent(q.name)}&limit=${DLQ_LIMIT}`),
  })));
  renderDlq(pages);
}

let first = true;

async function loop() {
  const updated = document.getElementById("updated");
  try {
    await refresh();
    if (first) lookupFromAddress();
    first = false;
    updated.textContent = `updated ${new Date().toLocaleTimeString()}`;
    updated.className = "muted";
  } catch (e) {
    updated.textContent = `refresh failed: ${e.message}`;
    updated.className = "error";
  }
  setTimeout(loop, REFRESH_MS);
}

document.getElementById("lookup").addEventListener("submit", submitLookup);
loop();
