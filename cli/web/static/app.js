// agentlog dashboard. No build step, no inline script (the CSP forbids it).
// Safety rule: every piece of history is put in the page with textContent; the only
// markup created from data is <mark> elements made with createElement for query matches
// and the server-sanitized markdown of transcript items (see reader.js).
// Links from the API are followed only when they are local paths ("/..." but not "//").
"use strict";

const $ = (sel) => document.querySelector(sel);
const FILTERS = ["project", "session", "job", "agent", "kind", "since", "until", "limit"];
let selected = -1;

function el(tag, cls, text) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}

function isLocal(link) {
  return typeof link === "string" && link.startsWith("/") && !link.startsWith("//")
    && !link.startsWith("/\\");
}

function fmtTime(ms) {
  if (typeof ms !== "number") return "";
  const d = new Date(ms);
  return isNaN(d.getTime()) ? "" : d.toISOString().replace("T", " ").slice(0, 19) + "Z";
}

function status(text, isError) {
  const s = $("#status");
  s.textContent = text || "";
  s.className = isError ? "error" : "";
}

async function api(path) {
  const resp = await fetch(path, { credentials: "same-origin", headers: { Accept: "application/json" } });
  let body = null;
  try { body = await resp.json(); } catch (e) { body = null; }
  if (!resp.ok) {
    const msg = body && typeof body.error === "string" ? body.error : resp.status + " " + resp.statusText;
    throw new Error(msg);
  }
  return body;
}

// --- coverage -------------------------------------------------------------------------
function humanBytes(n) {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return (i ? n.toFixed(1) : String(n)) + " " + units[i];
}

function describeCoverage(cov) {
  if (!cov || typeof cov !== "object") return "";
  const parts = [];
  if (typeof cov.events === "number") parts.push(cov.events + " events");
  if (typeof cov.sources === "number") {
    parts.push(cov.sources + " sources" + (cov.sourcesPending ? " (" + cov.sourcesPending + " pending)" : ""));
  }
  if (typeof cov.recordsParsed === "number") parts.push(cov.recordsParsed + " records");
  if (typeof cov.bytesCaptured === "number") parts.push(humanBytes(cov.bytesCaptured) + " captured");
  const unknown = Object.values(cov.unknownRecordTypes || {}).reduce((a, b) => a + (Number(b) || 0), 0);
  if (unknown) parts.push(unknown + " unknown records");
  parts.push(cov.lastCaptureAt ? "last capture " + fmtTime(cov.lastCaptureAt) : "no capture yet");
  return parts.join(" · ");
}

function showCoverage(cov, engine) {
  const text = describeCoverage(cov);
  $("#coverage").textContent = (engine ? "engine " + engine + (text ? " · " : "") : "") + text;
}

// --- views ----------------------------------------------------------------------------
function clearView(title) {
  // Each view renders into a body of its own: a view still loading when another replaces it
  // (a click during its fetch) appends into a body that is no longer in the page, never
  // into the view that replaced it.
  const body = el("div", "view-body");
  $("#view").replaceChildren(body);
  selected = -1;
  if (title) body.appendChild(el("h2", null, title));
  return body;
}

function hitMeta(hit) {
  const meta = el("div", "meta");
  meta.appendChild(el("span", "pill kind-" + String(hit.kind || "").replace(/[^a-z]/g, ""), hit.kind));
  if (hit.agent) meta.appendChild(el("span", "pill", hit.agent));
  meta.appendChild(el("time", null, fmtTime(hit.at)));
  for (const key of ["project", "session", "job", "run"]) {
    if (!hit[key]) continue;
    let href = null;
    if (key === "project") href = Browse.projectHref(hit.project);
    if (key === "session" && hit.agent && hit.kind === "transcript") href = Browse.sessionHref(hit.agent, hit.session);
    if (href) {
      const a = el("a", "field " + key, key + " " + hit[key]);
      a.href = href;
      a.addEventListener("click", (ev) => { ev.preventDefault(); go(href); });
      meta.appendChild(a);
    } else meta.appendChild(el("span", "field", key + " " + hit[key]));
  }
  return meta;
}

function renderSearch(result, q) {
  const view = clearView();
  showCoverage(result.coverage, result.engine);
  const terms = Reader.terms(q);
  if (result.answer) {
    const box = el("section", "answer");
    box.appendChild(el("h2", null, "Answer"));
    if (result.answer.error) box.appendChild(el("p", "error", result.answer.error));
    if (result.answer.text) box.appendChild(el("p", "answer-text", result.answer.text));
    const meta = [result.answer.agent, result.answer.model].filter(Boolean).join(" · ");
    if (meta) box.appendChild(el("p", "muted", meta));
    view.appendChild(box);
  }
  const hits = Array.isArray(result.hits) ? result.hits : [];
  status(hits.length ? hits.length + " hit" + (hits.length === 1 ? "" : "s") : "No hits.");
  const list = el("ol", "hits");
  hits.forEach((hit) => {
    const li = el("li", "hit");
    li.tabIndex = -1;
    li.appendChild(hitMeta(hit));
    const snip = el("p", "snippet");
    Reader.appendHighlighted(snip, hit.snippet, terms);
    li.appendChild(snip);
    const actions = el("div", "actions");
    if (isLocal(hit.link)) {
      // Opening a hit carries the query (to highlight) and the hit id (to focus).
      const extra = hit.link.startsWith("/?") ? "&" + new URLSearchParams({ hl: q || "", hit: hit.id || "" }) : "";
      const a = el("a", "open", "open");
      a.href = hit.link + extra;
      a.addEventListener("click", (ev) => { ev.preventDefault(); go(a.getAttribute("href")); });
      actions.appendChild(a);
    }
    const src = el("a", "source", "source");
    src.href = "/?doc=" + encodeURIComponent(hit.id);
    src.addEventListener("click", (ev) => { ev.preventDefault(); go(src.getAttribute("href")); });
    actions.appendChild(src);
    actions.appendChild(el("span", "muted id", hit.id));
    li.appendChild(actions);
    li.addEventListener("click", (ev) => {
      if (ev.target.closest("a")) return;
      select([...list.children].indexOf(li));
    });
    list.appendChild(li);
  });
  view.appendChild(list);
}

function renderDocument(doc, title) {
  const view = clearView(title || doc.id);
  view.appendChild(hitMeta(doc));
  view.appendChild(el("pre", "body", doc.body ?? doc.text ?? ""));
  if (isLocal(doc.link)) {
    const a = el("a", "open", "open in context");
    a.href = doc.link;
    a.addEventListener("click", (ev) => { ev.preventDefault(); go(doc.link); });
    view.appendChild(a);
  }
  return view;
}

// A conversation page list with a "more" button that follows `next` cursors. With `focus`
// (a predicate on items), pages are loaded until a matching item appears (at most 20
// pages), which is then selected and scrolled to.
// `opts.terms` are highlighted in every item; `opts.subagents` (from the session API) are
// grouped under the calls that started them. Items are rendered for reading (format=html).
async function pageConversation(view, id, focus, opts) {
  opts = opts || {};
  const terms = opts.terms || [];
  const pending = [...(opts.subagents || [])];
  const list = el("ol", "items");
  view.appendChild(list);
  const more = el("button", "more", "Load more");
  more.type = "button";
  let cursor = null;
  let found = null;
  async function load() {
    more.disabled = true;
    const qs = new URLSearchParams({ limit: "100", format: "html" });
    if (cursor) qs.set("after", cursor);
    const page = await api("/api/conversations/" + encodeURIComponent(id) + "?" + qs);
    (page.items || []).forEach((item) => {
      const li = Reader.renderItem(item);
      if (terms.length) Reader.highlight(li, terms);
      if (!found && focus && focus(item)) { found = li; li.classList.add("focus"); }
      list.appendChild(li);
    });
    cursor = page.next || null;
    more.disabled = false;
    more.hidden = !cursor;
    if (!opts.quiet) status(list.children.length + " item(s)" + (cursor ? "" : " · end of conversation"));
    Browse.attachSubagents(view, list, pending, !cursor, (box, conv) => pageConversation(box, conv, null, { terms, quiet: true }));
  }
  more.addEventListener("click", () => load().catch((e) => status(e.message, true)));
  view.appendChild(more);
  await load();
  for (let i = 0; focus && !found && cursor && i < 20; i++) await load();
  if (found) {
    Reader.reveal(found);
    select(rows().indexOf(found), "center");
  }
}

async function showConversation(params) {
  const id = params.get("conversation");
  const view = clearView("Conversation " + id);
  await pageConversation(view, id, null);
}

async function showMessage(params) {
  const id = params.get("message");
  const view = clearView("Message " + id);
  // A message hit may be a broker message, an owner question or its answer.
  for (const prefix of ["message:", "question:"]) {
    try {
      await pageConversation(view, prefix + id, (item) => item.message === id || item.id === prefix + id);
      return;
    } catch (e) {
      if (!/not found/.test(e.message)) throw e;
      view.replaceChildren(el("h2", null, "Message " + id));
    }
  }
  status("message " + id + " not found", true);
}

async function showSession(params) {
  const session = params.get("session");
  const child = params.get("child");
  const agent = params.get("agent") || "";
  // Conversation ids of transcripts are "<agent>:<session>[/<child>]".
  const id = (agent ? agent + ":" : "") + session + (child ? "/" + child : "");
  const from = params.get("from");
  const hit = params.get("hit");
  const view = clearView();
  const info = agent ? await Browse.sessionChrome(view, agent, session, child, go) : null;
  // the session's heading: its own title, else its first prompt, else its id
  const name = (info && (info.heading || info.title)) || (agent + " session " + session);
  view.appendChild(el("h2", "session-title", name + (child ? " / " + child : "")));
  let focus = null;
  if (hit) focus = (item) => item.id === hit;
  else if (from) focus = (item) => item.cursor === from;
  const conv = child ? id : ((info && info.conversation) || id);
  await pageConversation(view, conv, focus, {
    terms: Reader.terms(params.get("hl")),
    subagents: child || !info ? [] : info.subagents,
  });
}

async function showDoc(params) {
  renderDocument(await api("/api/history/" + encodeURIComponent(params.get("doc"))));
}

async function showRun(basename, from) {
  const view = clearView("Run " + basename);
  const pre = el("pre", "body log");
  view.appendChild(pre);
  const more = el("button", "more", "Load more");
  more.type = "button";
  let offset = from || "0";
  async function load() {
    const page = await api("/api/runs/" + encodeURIComponent(basename) + "?from=" + encodeURIComponent(offset));
    pre.appendChild(document.createTextNode(page.text ?? page.body ?? ""));
    const next = page.next ?? page.next_offset ?? null;
    more.hidden = next === null || next === undefined || String(next) === String(offset);
    offset = String(next);
  }
  more.addEventListener("click", () => load().catch((e) => status(e.message, true)));
  view.appendChild(more);
  await load();
}

async function showDecision(topic) {
  const view = clearView("Decision " + topic);
  const data = await api("/api/decisions/" + encodeURIComponent(topic) + "/history");
  const list = el("ol", "items");
  (data.revisions || data.items || []).forEach((rev) => {
    const li = Reader.renderItem({ role: "revision " + (rev.revision ?? ""), at: rev.at,
      sender: rev.author, text: rev.text ?? rev.body });
    list.appendChild(li);
  });
  view.appendChild(list);
}

// --- routing --------------------------------------------------------------------------
// The form mirrors the URL; a filtered URL opens the panel and names its active filters.
function fillForm(params) {
  $("#q").value = params.get("q") || "";
  const active = [];
  for (const f of FILTERS) {
    const input = $("#f-" + f);
    if (input) input.value = params.get(f) || "";
    if (params.get(f)) active.push(f + ": " + params.get(f));
  }
  $("#f-answer").checked = params.get("answer") === "true";
  if (params.get("q")) {
    $("#filters-active").textContent = active.length ? " (" + active.join(", ") + ")" : "";
    if (active.length) $("#filters").open = true;
  }
}

async function route() {
  const params = new URLSearchParams(location.search);
  fillForm(params);
  status("");
  try {
    const run = location.pathname.match(/^\/api\/runs\/([^/]+)$/);
    if (params.has("history")) return;  // history.js draws that view
    if (params.has("sessions")) return await Browse.show(clearView(), params, go);
    if (params.has("message")) return await showMessage(params);
    if (params.has("session")) return await showSession(params);
    if (params.has("conversation")) return await showConversation(params);
    if (params.has("doc")) return await showDoc(params);
    if (params.has("run")) return await showRun(params.get("run"), params.get("from"));
    if (params.has("decision")) return await showDecision(params.get("decision"));
    if (run) return await showRun(decodeURIComponent(run[1]), params.get("from"));
    if (params.get("q")) {
      status("Searching…");
      const qs = new URLSearchParams();
      for (const key of ["q", ...FILTERS, "answer"]) if (params.get(key)) qs.set(key, params.get(key));
      return renderSearch(await api("/api/search?" + qs), params.get("q"));
    }
    loadCoverage();
    await Browse.landing(clearView(), go);
  } catch (e) {
    status(e.message, true);
  }
}

// API links (runs, decisions) are shown inside the page rather than as raw JSON.
function pageUrl(link) {
  const run = link.match(/^\/api\/runs\/([^/?]+)(?:\?from=(\d+))?$/);
  if (run) return "/?run=" + run[1] + (run[2] ? "&from=" + run[2] : "");
  const dec = link.match(/^\/api\/decisions\/(.+)\/history$/);
  if (dec) return "/?decision=" + dec[1];
  const hist = link.match(/^\/api\/history\/(.+)$/);
  if (hist) return "/?doc=" + hist[1];
  return link;
}

function go(link) {
  if (!isLocal(link)) return;
  history.pushState(null, "", pageUrl(link));
  route();
}

async function loadCoverage() {
  try {
    const data = await api("/api/coverage");
    showCoverage(data.coverage, null);
  } catch (e) { /* coverage is optional */ }
}

// --- keyboard -------------------------------------------------------------------------
function rows() { return [...document.querySelectorAll("#view li.hit, #view li.item")]; }

function select(i, block) {
  const all = rows();
  if (!all.length) return;
  selected = Math.max(0, Math.min(all.length - 1, i));
  all.forEach((r, j) => r.classList.toggle("selected", j === selected));
  all[selected].focus({ preventScroll: true });
  all[selected].scrollIntoView({ block: block || "nearest" });
}

function typing(target) {
  return target && (target.tagName === "INPUT" || target.tagName === "SELECT" || target.tagName === "TEXTAREA");
}

document.addEventListener("keydown", (ev) => {
  if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
  if (ev.key === "/" && !typing(ev.target)) { ev.preventDefault(); $("#q").focus(); $("#q").select(); return; }
  if (ev.key === "Escape") {
    if (typing(ev.target)) { ev.target.blur(); return; }
    if (location.search && !new URLSearchParams(location.search).has("q")) history.back();
    return;
  }
  if (typing(ev.target)) return;
  if (ev.key === "ArrowDown" || ev.key === "j") { ev.preventDefault(); select(selected + 1); }
  else if (ev.key === "ArrowUp" || ev.key === "k") { ev.preventDefault(); select(selected - 1); }
  else if (ev.key === "Enter" && selected >= 0) {
    const open = rows()[selected]?.querySelector("a.open");
    if (open) { ev.preventDefault(); go(open.getAttribute("href")); }
  }
});

$("#search").addEventListener("submit", (ev) => {
  ev.preventDefault();
  const qs = new URLSearchParams();
  const q = $("#q").value.trim();
  if (!q) return;
  qs.set("q", q);
  for (const f of FILTERS) {
    const v = ($("#f-" + f).value || "").trim();
    if (v) qs.set(f, v);
  }
  if ($("#f-answer").checked) qs.set("answer", "true");
  history.pushState(null, "", "/?" + qs);
  route().then(() => { if (rows().length) select(0); });
});

$("#sessions-link").addEventListener("click", (ev) => { ev.preventDefault(); go("/?sessions="); });

window.addEventListener("popstate", route);
route();
