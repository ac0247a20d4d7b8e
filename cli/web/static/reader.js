// agentlog reader: conversations rendered for reading, query highlighting, resume commands.
// Loaded before app.js; exposes one global, `Reader`.
// Safety rule: history text goes into the page as text (textContent), except the `html`
// field of a transcript item, which the server rendered from markdown with raw HTML off and
// cleaned with nh3 (an allowlist of tags, http/https/mailto links only; code highlighted by
// Pygments as <span class="hl-…">). It is parsed in an
// inert <template> and checked once more here against the same allowlist before use.
"use strict";
const Reader = (() => {
  const TAGS = new Set(["P", "BR", "HR", "H1", "H2", "H3", "H4", "H5", "H6", "STRONG", "EM",
    "DEL", "S", "CODE", "PRE", "BLOCKQUOTE", "UL", "OL", "LI", "A", "TABLE", "THEAD", "TBODY",
    "TR", "TH", "TD", "SPAN"]);
  const ATTRS = { A: ["href", "title", "rel"], CODE: ["class"], SPAN: ["class"], TH: ["align"],
    TD: ["align"] };
  const MARKS = /[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]/g;
  const CJK = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}]/u;

  function el(tag, cls, text) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function fmtTime(ms) {
    if (typeof ms !== "number") return "";
    const d = new Date(ms);
    return isNaN(d.getTime()) ? "" : d.toISOString().replace("T", " ").slice(0, 19) + "Z";
  }

  // --- highlighting: whole words (as FTS5's unicode61 tokens match), or the literal
  // substring for CJK words (which both engines match as substrings). Case and diacritics
  // fold as the engines fold them.
  function fold(s) { return s.normalize("NFD").replace(MARKS, "").toLowerCase(); }

  function terms(q) {
    const words = String(q || "").normalize("NFC").match(/[\p{L}\p{N}]+/gu) || [];
    return [...new Set(words.map(fold).filter(Boolean))].slice(0, 32);
  }

  function escapeRegExp(s) { return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"); }

  function pattern(list) {
    if (!list.length) return null;
    const parts = [...list].sort((a, b) => b.length - a.length).map((t) => CJK.test(t)
      ? escapeRegExp(t)
      : "(?<![\\p{L}\\p{N}\\p{M}])" + escapeRegExp(t) + "(?![\\p{L}\\p{N}\\p{M}])");
    return new RegExp(parts.join("|"), "gu");
  }

  // [start, end) ranges of `text` that match, mapped back from the folded form.
  function ranges(text, re) {
    if (!re) return [];
    let folded = "";
    const idx = [];
    for (let i = 0; i < text.length;) {
      const ch = String.fromCodePoint(text.codePointAt(i));
      const f = fold(ch);
      folded += f;
      for (let k = 0; k < f.length; k++) idx.push(i);
      i += ch.length;
    }
    idx.push(text.length);
    const out = [];
    re.lastIndex = 0;
    for (const m of folded.matchAll(re)) {
      if (!m[0].length) continue;
      const start = idx[m.index];
      const endF = m.index + m[0].length;
      const end = endF < idx.length - 1 ? idx[endF] : text.length;
      if (end > start) out.push([start, end]);
    }
    return out;
  }

  function appendHighlighted(parent, text, list) {
    text = String(text ?? "");
    let last = 0;
    for (const [s, e] of ranges(text, pattern(list))) {
      if (s > last) parent.appendChild(document.createTextNode(text.slice(last, s)));
      parent.appendChild(el("mark", null, text.slice(s, e)));
      last = e;
    }
    if (last < text.length) parent.appendChild(document.createTextNode(text.slice(last)));
  }

  // Wrap matches in every text node under `root` (outside existing marks); returns count.
  function highlight(root, list) {
    const re = pattern(list);
    if (!re) return 0;
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    const nodes = [];
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      if (!n.parentElement.closest("mark, .meta, summary.call-line")) nodes.push(n);
    }
    let count = 0;
    for (const n of nodes) {
      const found = ranges(n.data, re);
      if (!found.length) continue;
      const frag = document.createDocumentFragment();
      let last = 0;
      for (const [s, e] of found) {
        if (s > last) frag.appendChild(document.createTextNode(n.data.slice(last, s)));
        frag.appendChild(el("mark", null, n.data.slice(s, e)));
        last = e;
        count++;
      }
      if (last < n.data.length) frag.appendChild(document.createTextNode(n.data.slice(last)));
      n.replaceWith(frag);
    }
    return count;
  }

  // --- sanitized markdown -------------------------------------------------------------
  function clean(node) {
    for (const child of [...node.children]) {
      if (!TAGS.has(child.tagName)) { child.replaceWith(document.createTextNode(child.textContent)); continue; }
      const allowed = ATTRS[child.tagName] || [];
      for (const a of [...child.attributes]) {
        if (!allowed.includes(a.name)) child.removeAttribute(a.name);
      }
      if (child.tagName === "A" && !/^(https?:|mailto:)/i.test(child.getAttribute("href") || "")) {
        child.removeAttribute("href");
      }
      if (child.tagName === "CODE" && !/^language-[\w+#.-]+$/.test(child.className)) child.removeAttribute("class");
      // highlighted code: Pygments' token classes only (coloured by /static/reader.css)
      if (child.tagName === "SPAN" && !/^hl-[a-z0-9]{1,6}$/.test(child.className)) child.removeAttribute("class");
      clean(child);
    }
    return node;
  }

  function markdown(html) {
    const tpl = document.createElement("template");
    tpl.innerHTML = String(html);  // server-sanitized (nh3); a template's content is inert
    const box = el("div", "md");
    box.appendChild(clean(tpl.content));
    return box;
  }

  // --- items --------------------------------------------------------------------------
  function firstLine(text, n) {
    const line = String(text || "").split("\n").find((l) => l.trim()) || "";
    return line.length > n ? line.slice(0, n - 1) + "…" : line;
  }

  function meta(item) {
    const m = el("div", "meta");
    const who = item.role || item.kind || "";
    if (who) m.appendChild(el("span", "pill", who));
    if (item.tool && item.role !== "tool_use") m.appendChild(el("span", "pill", item.tool));
    if (item.subagent_name || item.subagent) m.appendChild(el("span", "field", "subagent " + (item.subagent_name || item.subagent)));
    if (item.agent) m.appendChild(el("span", "field", item.agent));
    if (item.sender) m.appendChild(el("span", "field", "from " + item.sender));
    m.appendChild(el("time", null, fmtTime(item.at)));
    return m;
  }

  function collapsed(cls, line, body) {
    const d = el("details", cls);
    const s = el("summary", "call-line", line);
    d.append(s, body);
    return d;
  }

  function renderItem(item) {
    const role = String(item.role || item.kind || "").replace(/[^a-z_]/g, "");
    const li = el("li", "item role-" + role);
    li.tabIndex = -1;
    if (typeof item.id === "string") li.dataset.id = item.id;
    let body = item.text ?? item.body ?? item.snippet;
    if (body === undefined || body === null) body = JSON.stringify(item, null, 2);
    if (item.role === "tool_use") {
      li.appendChild(collapsed("call", "▸ " + (item.summary || firstLine(body, 160)) + "  " + fmtTime(item.at), el("pre", "body", body)));
    } else if (item.role === "tool_result") {
      li.appendChild(collapsed("result", "result" + (item.tool ? " · " + item.tool : "") + " · " + firstLine(body, 120), typeof item.html === "string" ? markdown(item.html) : el("pre", "body", body)));
    } else if (item.role === "thinking") {
      li.appendChild(collapsed("thinking", "thinking · " + firstLine(body, 120), typeof item.html === "string" ? markdown(item.html) : el("pre", "body", body)));
    } else {
      li.appendChild(meta(item));
      li.appendChild(typeof item.html === "string" ? markdown(item.html) : el("pre", "body", body));
    }
    if (item.truncated) li.appendChild(el("p", "muted truncated", "(shortened; the full record is kept in the log)"));
    return li;
  }

  // Open the collapsed parts holding `li` (and its own), so a focused item is readable.
  function reveal(li) {
    const own = li.querySelector(":scope > details");
    if (own) own.open = true;
    for (let p = li.parentElement; p; p = p.parentElement) if (p.tagName === "DETAILS") p.open = true;
  }

  // --- resume command -----------------------------------------------------------------
  async function copy(text, button) {
    try {
      await navigator.clipboard.writeText(text);
      button.textContent = "Copied";
    } catch (e) {
      button.textContent = "Select and copy";
    }
  }

  function resumeBox(resume) {
    const box = el("div", "resume");
    if (!resume || !resume.command) { box.appendChild(el("span", "muted", "no resume command for this agent")); return box; }
    box.appendChild(el("span", "muted", "Resume: "));
    box.appendChild(el("code", "resume-command", resume.command));
    const b = el("button", "copy", "Copy");
    b.type = "button";
    b.addEventListener("click", () => copy(resume.command, b));
    box.appendChild(b);
    return box;
  }

  return { el, fmtTime, terms, appendHighlighted, highlight, renderItem, reveal, resumeBox, markdown };
})();
