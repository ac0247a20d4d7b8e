// agentlog session browser: projects -> sessions -> conversation. Loaded after reader.js and
// before app.js; exposes one global, `Browse`, whose views app.js's router calls.
// Same safety rule as app.js: history text only ever enters the page as text.
"use strict";
const Browse = (() => {
  const { el } = Reader;

  async function getJson(path) {
    const resp = await fetch(path, { credentials: "same-origin", headers: { Accept: "application/json" } });
    let body = null;
    try { body = await resp.json(); } catch (e) { body = null; }
    if (!resp.ok) throw new Error(body && typeof body.error === "string" ? body.error : resp.status + " " + resp.statusText);
    return body;
  }

  function link(text, href, cls, go) {
    const a = el("a", cls || null, text);
    a.href = href;
    a.addEventListener("click", (ev) => { ev.preventDefault(); go(href); });
    return a;
  }

  function sessionHref(agent, session) {
    return "/?session=" + encodeURIComponent(session) + "&agent=" + encodeURIComponent(agent);
  }

  function projectHref(project) { return "/?sessions=" + encodeURIComponent(project || ""); }

  function crumbs(go, project, last) {
    const nav = el("nav", "crumbs");
    nav.setAttribute("aria-label", "breadcrumb");
    nav.appendChild(link("Sessions", "/?sessions=", null, go));
    if (project) { nav.append(" › "); nav.appendChild(link(project, projectHref(project), null, go)); }
    if (last) { nav.append(" › "); nav.appendChild(el("span", null, last)); }
    return nav;
  }

  async function showProjects(view, go) {
    view.appendChild(crumbs(go, null, null));
    view.appendChild(el("h2", null, "Projects"));
    const res = await getJson("/api/projects");
    const list = el("ol", "items projects");
    for (const p of res.projects) {
      const li = el("li", "item");
      li.tabIndex = -1;
      li.appendChild(link(p.project, projectHref(p.project), "open", go));
      li.appendChild(el("span", "muted", "  " + p.turns + " turns · last " + (p.last || "time unknown")));
      list.appendChild(li);
    }
    view.appendChild(list);
    if (!res.projects.length) view.appendChild(el("p", "muted", "No project has sessions yet."));
  }

  // One session of a list: its heading (own title, else first prompt, else id), agent, last
  // real record time ("time unknown" when its records carry none), counts, id.
  function sessionRow(s, go, project) {
    const li = el("li", "item session");
    li.tabIndex = -1;
    const head = el("div", "session-head");
    head.appendChild(link(s.heading || s.title || s.firstPrompt || s.sessionId, sessionHref(s.agent, s.sessionId), "open", go));
    const meta = el("div", "meta");
    meta.append(el("span", "pill agent", s.agent),
      s.last ? el("time", null, s.last) : el("span", "unknown-time", "time unknown"),
      el("span", "turns", s.turns + " turns"));
    if (project) meta.appendChild(link(project, projectHref(project), "field project", go));
    if (s.subagents) meta.appendChild(el("span", "field", s.subagents + " subagent(s)"));
    if (s.archived) meta.appendChild(el("span", "muted", "archived"));
    meta.appendChild(el("span", "muted id", s.sessionId));
    li.append(head, meta);
    if (s.firstPrompt && s.title) li.appendChild(el("p", "prompt", s.firstPrompt));
    return li;
  }

  async function showSessions(view, project, go) {
    view.appendChild(crumbs(go, project, null));
    view.appendChild(el("h2", null, project));
    const res = await getJson("/api/projects/" + encodeURIComponent(project) + "/sessions");
    const list = el("ol", "items sessions");
    for (const s of res.sessions) list.appendChild(sessionRow(s, go, null));
    view.appendChild(list);
    if (!res.sessions.length) view.appendChild(el("p", "muted", "No sessions in this project."));
    if (res.capped) view.appendChild(el("p", "muted", "Only the newest sessions are listed."));
    return res.sessions.length;
  }

  // The first screen: the most recent sessions (of the most recently active projects, from
  // the sessions API) and the projects (the projects API), newest activity first.
  const RECENT_PROJECTS = 6, RECENT_SESSIONS = 12, LANDING_PROJECTS = 15;
  async function landing(view, go) {
    let res;
    try { res = await getJson("/api/projects"); }
    catch (e) {  // e.g. nothing captured yet: the first screen says so, it is no failure
      view.appendChild(el("p", "muted landing-empty", e.message));
      return 0;
    }
    const box = el("div", "landing");
    const recent = el("section", "recent");
    recent.appendChild(el("h2", null, "Recent sessions"));
    const side = el("section", "projects");
    side.appendChild(el("h2", null, "Projects"));
    box.append(recent, side);
    view.appendChild(box);
    const plist = el("ol", "items projects");
    for (const p of res.projects.slice(0, LANDING_PROJECTS)) {
      const li = el("li", "item");
      li.tabIndex = -1;
      li.appendChild(link(p.project, projectHref(p.project), "open", go));
      li.appendChild(el("div", "meta", p.turns + " turns · last " + (p.last || "time unknown")));
      plist.appendChild(li);
    }
    side.appendChild(plist);
    if (res.projects.length > LANDING_PROJECTS) side.appendChild(link("All " + res.projects.length + " projects", "/?sessions=", "more-link", go));
    if (!res.projects.length) {
      recent.appendChild(el("p", "muted", "Nothing captured yet: run `agentlog capture`."));
      return 0;
    }
    const lists = await Promise.all(res.projects.slice(0, RECENT_PROJECTS).map((p) =>
      getJson("/api/projects/" + encodeURIComponent(p.project) + "/sessions")
        .then((r) => r.sessions.map((s) => ({ ...s, project: p.project })))
        .catch(() => [])));
    // newest real record first; sessions without a time last
    const t = (s) => (typeof s.at === "number" ? s.at : -1);
    const all = lists.flat().sort((a, b) => t(b) - t(a));
    const slist = el("ol", "items sessions");
    for (const s of all.slice(0, RECENT_SESSIONS)) slist.appendChild(sessionRow(s, go, s.project));
    recent.appendChild(slist);
    return all.length;
  }

  // `/?sessions=` (projects) or `/?sessions=<project>` (its sessions, newest first).
  async function show(view, params, go) {
    const project = params.get("sessions");
    if (project) return showSessions(view, project, go);
    return showProjects(view, go);
  }

  // The head of a session's conversation: breadcrumb, title, agent, resume command.
  async function sessionChrome(view, agent, session, child, go) {
    let info = null;
    try { info = await getJson("/api/sessions/" + encodeURIComponent(agent) + "/" + encodeURIComponent(session)); }
    catch (e) { return null; }
    view.appendChild(crumbs(go, info.project, info.heading || info.title || session));
    const meta = el("div", "meta session-meta");
    meta.append(el("span", "pill agent", agent), el("span", "muted id", session));
    if (child) meta.appendChild(link("← main thread", sessionHref(agent, session), null, go));
    view.appendChild(meta);
    view.appendChild(Reader.resumeBox(info.resume));
    return info;
  }

  // Put each subagent's thread under the call that started it (lazily loaded when opened);
  // subagents whose call is not on the page yet wait; at the end they are listed below.
  function attachSubagents(view, list, pending, done, loadInto) {
    for (const sub of [...pending]) {
      const parent = sub.parent ? list.querySelector('li[data-id="' + CSS.escape(sub.parent) + '"]') : null;
      if (!parent && !done) continue;
      const box = el("details", "subagent");
      box.appendChild(el("summary", "call-line", "subagent " + (sub.name || sub.subagent) + " · " + sub.turns + " turns"));
      let loaded = false;
      box.addEventListener("toggle", () => {
        if (!box.open || loaded) return;
        loaded = true;
        loadInto(box, sub.conversation).catch((e) => box.appendChild(el("p", "error", e.message)));
      });
      if (parent) parent.appendChild(box);
      else {
        let orphans = view.querySelector("section.subagents");
        if (!orphans) { orphans = el("section", "subagents"); orphans.appendChild(el("h3", null, "Subagents")); view.appendChild(orphans); }
        orphans.appendChild(box);
      }
      pending.splice(pending.indexOf(sub), 1);
    }
  }

  return { show, landing, sessionChrome, attachSubagents, sessionHref, projectHref };
})();
