// agentlog history view: per-project turns (session dropdown + filters), cross-project
// search, export and import. Loaded after app.js; everything lives in this closure, so no
// global name of app.js is redeclared. Same safety rule as app.js: history text is only
// ever put in the page as text; the previews' <mark> wrappers are rebuilt as elements
// (the server escapes everything else, and we never use innerHTML).
"use strict";
(() => {
  const P = "h";  // URL parameter prefix, so app.js never mistakes ours for its own
  const ROLES = ["", "user", "assistant", "tool_use", "tool_result", "thinking", "system"];
  const q = (sel, root) => (root || document).querySelector(sel);

  function node(tag, cls, text) {
    const n = document.createElement(tag);
    if (cls) n.className = cls;
    if (text !== undefined && text !== null) n.textContent = String(text);
    return n;
  }

  function say(text, isError) {
    const s = q("#status");
    if (!s) return;
    s.textContent = text || "";
    s.className = isError ? "error" : "";
  }

  async function getJson(path, init) {
    const resp = await fetch(path, Object.assign({ credentials: "same-origin",
      headers: { Accept: "application/json" } }, init || {}));
    let body = null;
    try { body = await resp.json(); } catch (e) { body = null; }
    if (!resp.ok) throw new Error(body && typeof body.error === "string" ? body.error : resp.status + " " + resp.statusText);
    return body;
  }

  // "&lt;b&gt; <mark>x</mark>" -> text nodes and <mark> elements (no HTML parsing)
  function unescapeHtml(s) {
    return s.replace(/&(lt|gt|amp|quot|#x27|#39);/g, (m, e) =>
      ({ lt: "<", gt: ">", amp: "&", quot: '"', "#x27": "'", "#39": "'" })[e]);
  }

  function appendPreview(parent, preview) {
    const re = /<mark>([\s\S]*?)<\/mark>/g;
    let last = 0;
    for (const m of String(preview || "").matchAll(re)) {
      parent.appendChild(document.createTextNode(unescapeHtml(preview.slice(last, m.index))));
      parent.appendChild(node("mark", null, unescapeHtml(m[1])));
      last = m.index + m[0].length;
    }
    parent.appendChild(document.createTextNode(unescapeHtml(String(preview || "").slice(last))));
  }

  function field(label, input) {
    const l = node("label", null, label + " ");
    l.appendChild(input);
    return l;
  }

  function input(name, value, placeholder) {
    const i = node("input");
    i.type = "text"; i.name = name; i.value = value || ""; i.id = "hist-" + name;
    if (placeholder) i.placeholder = placeholder;
    return i;
  }

  function select(name, options, value) {
    const s = node("select");
    s.name = name; s.id = "hist-" + name;
    for (const [v, text] of options) {
      const o = node("option", null, text);
      o.value = v;
      if (v === (value || "")) o.selected = true;
      s.appendChild(o);
    }
    return s;
  }

  function params() { return new URLSearchParams(location.search); }

  // "N archived sessions hidden · show them": the link turns the archived filter on
  function hiddenNote(n, ps) {
    if (!n) return null;
    const p = node("p", "muted");
    p.id = "hist-hidden";
    const next = new URLSearchParams(ps);
    next.set(P + "arch", "true");
    const a = node("a", null, "show them");
    a.id = "hist-show-archived";
    a.href = "/?" + next;
    a.addEventListener("click", (ev) => { ev.preventDefault(); navigate(next); });
    p.append(node("span", null, n + " archived session" + (n === 1 ? "" : "s") + " hidden · "), a);
    return p;
  }

  function navigate(qs) {
    history.pushState(null, "", "/?" + qs);
    render();
  }

  function addNavLink() {
    if (q("#history-link")) return;
    const home = q("#home");
    if (!home) return;
    const a = node("a", null, "History");
    a.id = "history-link"; a.href = "/?history=";
    a.addEventListener("click", (ev) => { ev.preventDefault(); navigate("history="); });
    home.after(a);
  }

  async function render() {
    const ps = params();
    if (!ps.has("history")) return;
    const page = q("#view");
    if (!page) return;
    // a body of its own (as app.js's clearView): a view that loads late writes nowhere
    const view = node("div", "view-body");
    page.replaceChildren(view);
    say("");
    const cov = q("#coverage");
    if (cov) cov.textContent = "";
    const project = ps.get("history");
    try {
      if (project) await renderProject(view, project, ps);
      else await renderOverview(view, ps);
    } catch (e) {
      say(e.message, true);
    }
  }

  async function renderOverview(view, ps) {
    view.appendChild(node("h2", null, "History"));
    const form = node("form", "hist-search");
    form.id = "hist-search";
    const qi = input("q", ps.get(P + "q"), "Search every project");
    const role = select("role", ROLES.map((r) => [r, r || "any role"]), ps.get(P + "role"));
    const arch = node("input"); arch.type = "checkbox"; arch.id = "hist-archived";
    arch.checked = ps.get(P + "arch") === "true";
    form.append(qi, role, field("archived", arch), node("button", null, "Search"));
    form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      const qs = new URLSearchParams({ history: "" });
      if (qi.value.trim()) qs.set(P + "q", qi.value.trim());
      if (role.value) qs.set(P + "role", role.value);
      if (arch.checked) qs.set(P + "arch", "true");
      navigate(qs);
    });
    view.appendChild(form);
    const text = ps.get(P + "q");
    if (text) {
      const qs = new URLSearchParams({ q: text });
      if (ps.get(P + "role")) qs.set("role", ps.get(P + "role"));
      if (ps.get(P + "arch") === "true") qs.set("include_archived", "true");
      say("Searching…");
      const res = await getJson("/api/history?" + qs);
      say(res.hits.length + " hits" + (res.capped ? " (capped at 200)" : ""));
      const list = node("ol", "hits");
      list.id = "hist-hits";
      for (const hit of res.hits) {
        const li = node("li", "hit");
        li.tabIndex = -1;
        const meta = node("div", "meta");
        const proj = node("a", "pill", hit.project || "-");
        proj.href = "/?history=" + encodeURIComponent(hit.project || "");
        proj.addEventListener("click", (ev) => { ev.preventDefault(); navigate("history=" + encodeURIComponent(hit.project || "")); });
        meta.append(proj, node("span", "pill", hit.role), node("span", null, hit.ts || ""));
        if (hit.archived) meta.appendChild(node("span", "muted", "archived"));
        const snip = node("div", "snippet");
        appendPreview(snip, hit.preview);
        li.append(meta, snip, openLink(hit.id, hit, text));
        list.appendChild(li);
      }
      view.appendChild(list);
      const note = hiddenNote(res.hiddenArchivedSessions, ps);
      if (note) view.appendChild(note);
      return;
    }
    const res = await getJson("/api/projects" +
      (ps.get(P + "arch") === "true" ? "?include_archived=true" : ""));
    const list = node("ol", "items");
    for (const p of res.projects) {
      const li = node("li", "item");
      const a = node("a", "open", p.project);
      a.href = "/?history=" + encodeURIComponent(p.project);
      a.addEventListener("click", (ev) => { ev.preventDefault(); navigate("history=" + encodeURIComponent(p.project)); });
      li.append(a, node("span", "muted", "  " + p.turns + " turns · last " + (p.last || "-")));
      list.appendChild(li);
    }
    if (!res.projects.length) view.appendChild(node("p", "muted", "No project has turns yet."));
    view.appendChild(list);
    const note = hiddenNote(res.hiddenArchivedSessions, ps);
    if (note) view.appendChild(note);
  }

  const FIELDS = ["session", "role", "tool", "thread", "agent", "since", "until", "q"];

  async function renderProject(view, project, ps) {
    const qs = new URLSearchParams();
    for (const f of FIELDS) if (ps.get(P + f)) qs.set(f, ps.get(P + f));
    if (ps.get(P + "arch") === "true") qs.set("include_archived", "true");
    const page = ps.get(P + "page") || "1";
    qs.set("page", page);
    const base = "/api/projects/" + encodeURIComponent(project) + "/history";
    say("Loading…");
    const res = await getJson(base + "?" + qs);
    say("");
    view.appendChild(node("h2", null, project));

    const form = node("form");
    form.id = "hist-filters";
    const sessions = [["", "all sessions"]].concat(res.sessions.map((s) =>
      [s.sessionId, (s.last || "").slice(0, 16) + " · " + s.turns + " · " + (s.title || s.sessionId)]));
    const inputs = {
      session: select("session", sessions, ps.get(P + "session")),
      role: select("role", ROLES.map((r) => [r, r || "any"]), ps.get(P + "role")),
      tool: input("tool", ps.get(P + "tool"), "Bash"),
      thread: input("thread", ps.get(P + "thread"), "main | all | @name"),
      agent: input("agent", ps.get(P + "agent"), "claude, codex, …"),
      since: input("since", ps.get(P + "since"), "2026-01-01T00:00Z"),
      until: input("until", ps.get(P + "until"), "epoch ms or ISO-8601"),
      q: input("q", ps.get(P + "q"), "words"),
    };
    const arch = node("input"); arch.type = "checkbox"; arch.id = "hist-archived";
    arch.checked = ps.get(P + "arch") === "true";
    for (const f of FIELDS) form.appendChild(field(f === "q" ? "text" : f, inputs[f]));
    form.append(field("archived", arch), node("button", null, "Apply"));
    form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      const next = new URLSearchParams({ history: project });
      for (const f of FIELDS) if (inputs[f].value.trim()) next.set(P + f, inputs[f].value.trim());
      if (arch.checked) next.set(P + "arch", "true");
      navigate(next);
    });
    inputs.session.addEventListener("change", () => form.requestSubmit());
    view.appendChild(form);

    const tools = node("div", "actions");
    const exp = node("a", null, "Export JSON");
    exp.id = "hist-export";
    const eq = new URLSearchParams();
    if (ps.get(P + "session")) eq.set("session", ps.get(P + "session"));
    exp.href = base + "/export" + (eq.toString() ? "?" + eq : "");
    exp.setAttribute("download", "");
    const imp = node("form");
    imp.id = "hist-import";
    const file = node("input"); file.type = "file"; file.name = "file"; file.accept = "application/json,.json";
    const apply = node("input"); apply.type = "checkbox"; apply.id = "hist-apply";
    imp.append(file, field("apply (uncheck for a dry run)", apply), node("button", null, "Import"));
    imp.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      if (!file.files.length) { say("choose an export file first", true); return; }
      const body = new FormData();
      body.append("file", file.files[0]);
      body.append("apply", apply.checked ? "true" : "false");
      try {
        const r = await getJson(base + "/import", { method: "POST", body });
        const verb = r.dryRun ? "Dry run: would import " : "Imported ";
        say(verb + r.turnsToInsert + " turns in " + r.sessionsToInsert + " session(s)" +
            (r.warning ? " — " + r.warning : ""));
        if (r.applied) render();
      } catch (e) { say(e.message, true); }
    });
    tools.append(exp, imp);
    view.appendChild(tools);

    const list = node("ol", "items");
    list.id = "hist-turns";
    for (const t of res.turns) {
      const li = node("li", "item");
      li.tabIndex = -1;
      const meta = node("div", "meta");
      meta.append(node("span", null, t.ts || ""), node("span", "pill", t.role));
      if (t.tool) meta.appendChild(node("span", "pill", t.tool));
      if (t.subagentName) meta.appendChild(node("span", "pill", "@" + t.subagentName));
      meta.appendChild(node("span", "muted", t.sessionId));
      if (t.archived) meta.appendChild(node("span", "muted", "archived"));
      li.append(meta, node("pre", "body", t.content), openLink(t.id, t, ps.get(P + "q")));
      list.appendChild(li);
    }
    view.appendChild(list);
    if (!res.turns.length) view.appendChild(node("p", "muted", "No turns match."));
    const note = hiddenNote(res.hiddenArchivedSessions, ps);
    if (note) view.appendChild(note);
    const nav = node("div", "actions");
    const n = parseInt(page, 10);
    if (n > 1) nav.appendChild(pager("← Previous", n - 1));
    if (res.next) nav.appendChild(pager("Next page →", res.next));
    nav.appendChild(node("span", "muted", "page " + n + " · " + res.turns.length + " turns"));
    view.appendChild(nav);
  }

  // Enter on a selected row (app.js's keyboard handler) follows its a.open link.
  // A turn also links its place in the session's conversation (hit marked, words lit).
  function openLink(id, turn, words) {
    const box = node("div", "actions");
    const a = node("a", "open", "open");
    a.href = "/?doc=" + encodeURIComponent(id || "");
    box.appendChild(a);
    if (turn && turn.sessionId && turn.agent) {
      const qs = new URLSearchParams({ session: turn.sessionId, agent: turn.agent, hit: id || "" });
      if (turn.subagent) qs.set("child", turn.subagent);
      if (words) qs.set("hl", words);
      const c = node("a", "conversation", "in conversation");
      c.href = "/?" + qs;
      box.appendChild(c);
    }
    return box;
  }

  function pager(label, page) {
    const b = node("button", "more", label);
    b.addEventListener("click", () => {
      const ps = params();
      ps.set(P + "page", String(page));
      navigate(ps);
    });
    return b;
  }

  addNavLink();
  window.addEventListener("popstate", render);
  render();
})();
