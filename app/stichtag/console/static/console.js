// stichtag auditor console: plain ES module, no framework, no build step.
// The API key lives only in sessionStorage (gone when the tab closes). Every visible string
// comes from messages.js through t() / code(); dates and numbers through i18n.js.

import { code, currentLang, date, dateTime, num, setLang, t } from "./i18n.js";

const KEY_STORE = "stichtag.apiKey";
const $ = (id) => document.getElementById(id);

const state = { lastRunId: null, historyKey: null, assertions: [], probeDate: null, diff: null };

// What each result area shows, as a function that draws it again: a language switch
// redraws every view in the new language (no request repeated except the version panel's).
const views = new Map();
function view(id, draw) {
  views.set(id, draw);
  return draw();
}

// ---------- small DOM helpers (textContent only: no HTML from the server is trusted) ----------

export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") node.className = v;
    else if (k === "text") node.textContent = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}

const SVG_NS = "http://www.w3.org/2000/svg";
function svg(tag, attrs = {}, ...children) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "text") node.textContent = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, String(v));
  }
  for (const c of children.flat()) if (c) node.append(c);
  return node;
}

function today() {
  const d = new Date();
  const p = (n) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}`;
}

const fmt = (x, digits = 4) => num(x, digits);
export const day = (iso) => (iso ? date(iso) : t("time.open"));

// text: a string, or a function that makes it (so it follows a language switch).
let lastMessage = null;
function showMessage(text, kind = "error") {
  const m = $("message");
  lastMessage = { text, kind };
  const s = typeof text === "function" ? text() : text;
  m.textContent = s;
  m.className = "message" + (kind === "error" ? "" : " info");
  m.hidden = !s;
}

// ---------- API ----------

class ApiError extends Error {
  constructor(status, problem) {
    super(problem?.detail || problem?.title || `HTTP ${status}`);
    this.status = status;
    this.problem = problem;
  }
}

export async function api(path, { method = "GET", body, raw = false } = {}) {
  const key = sessionStorage.getItem(KEY_STORE);
  const headers = { Accept: raw ? "*/*" : "application/json" };
  if (key) headers.Authorization = `Bearer ${key}`;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const resp = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  if (!resp.ok) {
    let problem = null;
    try { problem = await resp.json(); } catch { /* not JSON */ }
    if (resp.status === 401) setSignedIn(false);
    throw new ApiError(resp.status, problem);
  }
  return raw ? resp.text() : resp.json();
}

// A file from the API (page images, originals): fetched with the key, never by URL alone.
export async function apiBlob(path) {
  const key = sessionStorage.getItem(KEY_STORE);
  const resp = await fetch(path, { headers: key ? { Authorization: `Bearer ${key}` } : {} });
  if (!resp.ok) {
    let problem = null;
    try { problem = await resp.json(); } catch { /* not JSON */ }
    throw new ApiError(resp.status, problem);
  }
  return resp.blob();
}

// The page image as a data: URL (the page's CSP allows img-src 'self' data:, no blob:).
function dataUrl(blob) {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(reader.result);
    reader.onerror = () => reject(reader.error);
    reader.readAsDataURL(blob);
  });
}

function describeError(err) {
  if (err instanceof ApiError) {
    const p = err.problem || {};
    const fields = (p.errors || []).map((e) => `${e.field}: ${e.message || e.detail || ""}`).join("; ");
    // The server's title and detail stay in its words; only the fallback is ours.
    if (!p.title && !p.detail && !fields) return t("error.http", { status: String(err.status) });
    return `${err.status} ${p.title || ""}${p.detail ? " — " + p.detail : ""}${fields ? " (" + fields + ")" : ""}`;
  }
  return String(err?.message || err);
}

export async function guarded(button, fn) {
  if (!sessionStorage.getItem(KEY_STORE)) {
    showMessage(() => t("signin.first"));
    $("api-key").focus();
    return;
  }
  showMessage("");
  if (button) button.disabled = true;
  try { await fn(); } catch (err) { showMessage(() => describeError(err)); } finally { if (button) button.disabled = false; }
}

// ---------- sign in ----------

function setSignedIn(on) {
  $("signin-form").hidden = on;
  $("signed-in").hidden = !on;
  if (!on) sessionStorage.removeItem(KEY_STORE);
  else {
    const k = sessionStorage.getItem(KEY_STORE) || "";
    const id = k.split("_")[1] || "";
    $("signed-in-label").textContent = id ? t("signin.as", { id }) : t("signin.done");
  }
  document.body.dataset.signedIn = on ? "yes" : "no";
}

async function signIn(ev) {
  ev.preventDefault();
  const key = $("api-key").value.trim();
  if (!key) { showMessage(() => t("signin.enter")); return; }
  sessionStorage.setItem(KEY_STORE, key);
  try {
    // Any authenticated request tells a valid key from an invalid one: 401 means rejected,
    // 403 means valid but without the audit scope.
    await api("/v1/thresholds");
  } catch (err) {
    if (!(err instanceof ApiError) || err.status === 401) {
      sessionStorage.removeItem(KEY_STORE);
      showMessage(err.status === 401 ? () => t("signin.rejected") : () => describeError(err));
      return;
    }
  }
  $("api-key").value = "";
  setSignedIn(true);
  showMessage("");
  $("question").focus();
}

function signOut() {
  setSignedIn(false);
  $("api-key").focus();
}

// ---------- tabs ----------

const TABS = ["ask", "history", "runs", "changes", "review", "leverage"];
export function selectTab(name, focus = false) {
  for (const tabName of TABS) {
    const on = tabName === name;
    const tab = $(`tab-${tabName}`);
    tab.setAttribute("aria-selected", on ? "true" : "false");
    tab.tabIndex = on ? 0 : -1;
    $(`panel-${tabName}`).hidden = !on;
    if (on && focus) tab.focus();
  }
  if (name === "runs" && state.lastRunId && !$("run-id").value) $("run-id").value = state.lastRunId;
}

function tabKeys(ev) {
  const i = TABS.indexOf(ev.target.id.replace("tab-", ""));
  if (ev.key === "ArrowRight") selectTab(TABS[(i + 1) % TABS.length], true);
  else if (ev.key === "ArrowLeft") selectTab(TABS[(i + TABS.length - 1) % TABS.length], true);
  else return;
  ev.preventDefault();
}

// ---------- source version side panel ----------

export async function openVersion(versionId, citation = null, assertion = null) {
  const v = await api(`/v1/versions/${encodeURIComponent(versionId)}`);
  views.set("version-panel", () => ($("version-panel").hidden ? null
    : guarded(null, () => openVersion(versionId, citation, assertion))));
  const panel = $("version-panel");
  const meta = $("version-meta");
  const body = $("version-text");
  meta.replaceChildren();
  body.replaceChildren();
  const row = (k, v2, cls, id) => [el("dt", { text: k }), el("dd", { class: cls, id }, v2)];
  const doc = citation?.document || assertion?.document;
  if (doc) meta.append(...row(t("label.document"), doc));
  meta.append(...row(t("label.version"), el("code", { id: "version-id", text: v.version_id })));
  const from = citation?.valid_from || assertion?.valid_from;
  if (from) meta.append(...row(t("label.valid"), `${day(from)} → ${day(citation ? citation.valid_to : assertion.valid_to)}`));
  if (assertion) meta.append(...row(t("label.known"), `${day(assertion.tx_from)} → ${day(assertion.tx_to)}`));
  if (citation) {
    meta.append(...row(t("version.heading_path"), el("span", { id: "heading-path", class: "heading-path" },
      (citation.heading_path || []).join(" › ") || t("version.no_heading"))));
    meta.append(...row(t("version.offsets"), t("version.offsets.value", { start: String(citation.start), end: String(citation.end),
      u16start: String(citation.utf16_start), u16end: String(citation.utf16_end) })));
  }
  meta.append(...row(t("version.length"), t("version.length.value", { length: v.length, utf16: v.utf16_length }), null, "version-length"));
  if (v.source) {
    const src = v.source;
    const pages = src.pages ? t("version.pages", { pages: src.pages })
      + (src.empty_pages.length ? t("version.empty_pages", { pages: src.empty_pages.join(", ") }) : "") : "";
    meta.append(...row(t("label.source"), el("span", { id: "version-source" },
      t("version.source", { media: src.media_type, pages, extractor: src.extractor_id }), " ",
      el("button", { type: "button", id: "download-original",
        onclick: () => guarded(null, () => downloadOriginal(v.version_id, src)) }, t("version.download")))));
  }
  const pageView = $("page-view");
  pageView.replaceChildren();
  pageView.hidden = true;
  pageView.dataset.ready = "no";

  const text = v.text;
  if (citation) {
    // JS strings are UTF-16: slice by the UTF-16 offsets, never by code points.
    const s = citation.utf16_start, e = citation.utf16_end;
    const mark = el("mark", { id: "quote-mark", class: "quote", tabindex: "-1",
      "data-version": v.version_id, "data-start": s, "data-end": e }, text.slice(s, e));
    body.append(text.slice(0, s), mark, text.slice(e));
    const ok = text.slice(s, e) === citation.quote;
    meta.append(...row(t("version.quote_check"), el("span", { id: "quote-check", class: ok ? "passed" : "failed",
      text: ok ? t("version.quote_ok") : t("version.quote_mismatch") })));
    panel.hidden = false;
    if (citation.boxes && citation.boxes.length) {
      // A PDF source: the page image with the quote's boxes over it; the text below.
      try {
        await showPage(v.version_id, citation, citation.page);
      } catch (err) {  // e.g. a password-protected original: the text view still stands
        pageView.replaceChildren(el("p", { class: "small", id: "page-unavailable",
          text: t("page.unavailable", { error: describeError(err) }) }));
        pageView.hidden = false;
      }
      pageView.scrollIntoView({ block: "start" });
    } else {
      mark.scrollIntoView({ block: "center" });
    }
    mark.focus({ preventScroll: true });
  } else {
    body.append(text);
    panel.hidden = false;
    body.focus();
  }
}

// Boxes are PDF points from the page's bottom-left corner (unrotated), and the page image
// shows the same frame: so each box is a rectangle in percent of the image, whatever size
// the image is drawn at (y flips: the image's top is the page's height). Set through the
// CSSOM: the CSP (style-src 'self') refuses style attributes.
export function boxStyle(b) {
  const pct = (x) => `${(100 * x).toFixed(4)}%`;
  return { left: pct(b.x0 / b.page_width), top: pct(1 - b.y1 / b.page_height),
    width: pct((b.x1 - b.x0) / b.page_width), height: pct((b.y1 - b.y0) / b.page_height) };
}

function pageBox(b, i) {
  const node = el("div", { class: "page-box", "data-n": i, "data-page": b.page, title: t("page.box") });
  Object.assign(node.style, boxStyle(b));
  return node;
}

async function showPage(versionId, citation, page) {
  const view = $("page-view");
  const pages = [...new Set(citation.boxes.map((b) => b.page))];
  const img = el("img", { id: "page-image", alt: t("page.alt", { page }), "data-page": page });
  const frame = el("div", { class: "page-frame", id: "page-frame" }, img,
    citation.boxes.filter((b) => b.page === page).map(pageBox));
  const nav = pages.length > 1 ? el("p", { class: "small" }, t("page.runs_over"), " ",
    pages.map((p) => el("button", { type: "button", class: "page-button", "aria-pressed": p === page ? "true" : "false",
      onclick: () => guarded(null, () => showPage(versionId, citation, p)) }, String(p)))) : null;
  view.replaceChildren(el("p", { class: "small", id: "page-label", text: t("page.label", { page }) }), nav, frame,
    el("h3", { text: t("page.extracted") }));
  view.hidden = false;
  const blob = await apiBlob(`/v1/versions/${encodeURIComponent(versionId)}/pages/${page}?pixels=1400`);
  const loaded = new Promise((resolve, reject) => { img.onload = resolve; img.onerror = reject; });
  img.src = await dataUrl(blob);
  await loaded;
  view.dataset.ready = "yes";
}

async function downloadOriginal(versionId, src) {
  const blob = await apiBlob(`/v1/versions/${encodeURIComponent(versionId)}/original`);
  const ext = { "application/pdf": "pdf", "text/html": "html" }[src.media_type] || "docx";
  const a = el("a", { href: URL.createObjectURL(blob), download: `${src.original_id.slice(3, 19)}.${ext}` });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 10_000);
}

function closePanel() {
  $("version-panel").hidden = true;
  views.delete("version-panel");
  document.querySelectorAll(".chip[aria-pressed=true]").forEach((c) => c.setAttribute("aria-pressed", "false"));
}

// ---------- Ask ----------

function chipFor(citation, n) {
  const label = `[${n}] ${citation.document}`;
  const where = (citation.heading_path || []).join(" › ");
  return el("button", {
    type: "button", class: "chip", "aria-pressed": "false", "data-n": n,
    "data-version": citation.version_id, "data-quote": citation.quote,
    "aria-label": t("chip.label", { n: String(n), document: citation.document + (where ? ", " + where : "") }),
    title: where || citation.document,
    onclick: (ev) => guarded(null, async () => {
      document.querySelectorAll(".chip[aria-pressed=true]").forEach((c) => c.setAttribute("aria-pressed", "false"));
      ev.currentTarget?.setAttribute?.("aria-pressed", "true");
      await openVersion(citation.version_id, citation);
    }),
  }, label);
}

function renderAnswer(a) {
  const box = $("answer");
  box.replaceChildren();
  box.append(el("p", {},
    el("span", { id: "answer-status", class: `status ${a.status}`, "data-status": a.status, text: code("status", a.status) }),
    " ", el("span", { class: "small", id: "answer-asof" },
      t("answer.asof", { valid: day(a.as_of.valid_at), known: day(a.as_of.known_at), generator: code("generator", a.generator) }) +
      (a.coverage !== null && a.coverage !== undefined ? " · " + t("answer.coverage", { coverage: fmt(a.coverage, 2) }) : "") +
      " · " + t("answer.thresholds", { version: String(a.thresholds_version) }) + " · " + t("answer.run") + " "),
    el("code", { id: "answer-run-id", text: a.run_id })));
  if (a.index && a.index.complete === false) {
    // Recorded with the run: the answer may change once the index has caught up.
    box.append(el("p", { id: "answer-index", class: "index-note small", "data-pending": a.index.pending,
      text: t("answer.index_incomplete", { pending: a.index.pending, lexical: a.index.lexical_pending }) }));
    document.dispatchEvent(new CustomEvent("stichtag:index"));
  }

  if (a.status === "abstained" || a.reason) {
    // The gate that refused says why in its own words (the scope gate names the terms
    // that occur in no document in force at the Stichtag).
    const refused = (a.gates || []).find((g) => !g.passed);
    box.append(el("dl", { class: "abstention", id: "abstention" },
      el("dt", { text: t("abstain.reason") }),
      el("dd", { id: "abstain-reason", "data-code": a.reason || "", text: code("reason", a.reason) }),
      el("dt", { text: t("abstain.gate") }),
      el("dd", { id: "abstain-gate", "data-gate": refused ? refused.gate : "",
        text: refused ? `${code("gate", refused.gate)}: ${refused.detail || ""}` : "—" }),
      el("dt", { text: t("abstain.values") }),
      el("dd", { id: "abstain-values", text: t("abstain.values.text", { threshold: fmt(a.threshold), observed: fmt(a.observed) }) }),
      el("dt", { text: t("abstain.next") }), el("dd", { id: "abstain-next", text: a.next_step || "—" })));
  }

  let n = 0;
  if (a.sentences.length) {
    const ol = el("ol", { class: "sentences", id: "sentences" });
    for (const s of a.sentences) {
      const cited = s.citations && s.citations.length > 0;
      ol.append(el("li", { class: cited ? "cited" : "uncited" },
        el("span", { class: "text", text: s.text }),
        cited ? s.citations.map((c) => chipFor(c, ++n))
          : el("span", { class: "uncited-label", text: t("answer.uncited") })));
    }
    box.append(ol);
  }

  if (a.gaps && a.gaps.length) {
    box.append(el("h3", { text: t("answer.gaps") }), el("ul", {}, a.gaps.map((g) => el("li", { text: g }))));
  }
  if (a.conflicts && a.conflicts.length) {
    box.append(el("h3", { text: t("answer.conflicts") }), el("ul", {}, a.conflicts.map((c) =>
      el("li", {}, t("answer.conflict", { rule: c.rule || t("answer.conflict.no_rule"), winner: c.winner || "—", loser: c.loser || "—" }), " ",
        c.citations.map((cit) => chipFor(cit, ++n))))));
  }

  if (a.listing) box.append(listingFor(a.listing));

  // Sources line: only documents the generator consulted — cited excerpts and documents
  // opened in full (docs/architecture.md §7). A server without source_line: sources whose consulted flag
  // is not false (a missing flag counts as consulted).
  const consulted = (a.sources || []).filter((s) => s.consulted !== false);
  const lineDocs = a.source_line || [...new Set(consulted.map((s) => s.citation.document))];
  const citedBy = new Map();
  for (const s of a.sentences || []) {
    for (const c of s.citations || []) citedBy.set(c.document, (citedBy.get(c.document) || 0) + 1);
  }
  const opened = new Set((a.documents || []).filter((d) => d.opened).map((d) => d.document));
  box.append(el("p", { class: "sources", id: "sources-line" }, el("strong", { text: t("answer.sources") }), " ",
    lineDocs.length ? lineDocs.map((doc, i) =>
      el("span", { class: "source", "data-document": doc },
        (i ? " · " : "") + doc + " (" + t("answer.cited_n", { n: citedBy.get(doc) || 0 })
        + (opened.has(doc) ? ", " + t("answer.read_in_full") : "") + ")"))
      : (a.listing ? t("answer.sources.listed") : t("answer.sources.none"))));
  // Linked but not read (a title seen in a list): the link stays, without a source chip.
  const unread = (a.documents || []).filter((d) => d.cited && d.consulted === false);
  if (unread.length && !a.listing) {
    box.append(el("p", { class: "small", id: "linked-not-read" },
      t("answer.linked_not_read", { documents: unread.map((d) => d.document).join(", ") })));
  }
  if (consulted.length) {
    box.append(el("details", {}, el("summary", { text: t("answer.consulted", { n: consulted.length }) }),
      el("table", {}, el("thead", {}, el("tr", {}, [t("col.id"), t("label.document"), t("col.heading"), t("col.score"), t("col.cited"), ""].map((h) => el("th", { text: h })))),
        el("tbody", {}, consulted.map((s) => el("tr", {},
          el("td", { text: s.id }), el("td", { text: s.citation.document }),
          el("td", { text: (s.citation.heading_path || []).join(" › ") }),
          el("td", { class: "num", text: fmt(s.score) }), el("td", { text: s.cited ? t("word.yes") : t("word.no") }),
          el("td", {}, el("button", { type: "button", onclick: () => guarded(null, () => openVersion(s.citation.version_id, s.citation)) }, t("button.open")))))))));
  }

  box.append(el("h3", { text: t("answer.gates") }), gatesTable(a.gates, "answer-gates"));
}

// A list answer: documents or versions from the catalogue, each a link to its version.
function listingFor(listing) {
  const range = (i) => `${date(i.valid_from)} – ${day(i.valid_to)}`;
  const title = listing.kind === "versions" ? t("listing.versions", { subject: listing.subject }) +
    (listing.window ? " " + t("listing.window", { from: date(listing.window[0]), to: date(listing.window[1]) }) : "")
    : t("listing.documents", { subject: listing.subject });
  if (!listing.items.length) {
    return el("div", { id: "listing" }, el("h3", { text: title }), el("p", { class: "small", text: t("listing.empty") }));
  }
  return el("div", { id: "listing" }, el("h3", { text: title }),
    el("ul", {}, listing.items.map((i) => el("li", {},
      el("button", { type: "button", class: "link listed", "data-version": i.version_id,
        onclick: () => guarded(null, () => openVersion(i.version_id)) }, `${i.title} (${i.document})`),
      ` ${range(i)}`))));
}

function gatesTable(gates, id) {
  return el("table", { id }, el("thead", {}, el("tr", {}, [t("col.gate"), t("col.decision"), t("col.threshold"), t("col.observed"), t("col.detail")].map((h) => el("th", { text: h })))),
    el("tbody", {}, (gates || []).map((g) => el("tr", { "data-gate": g.gate },
      el("td", { text: code("gate", g.gate) }),
      el("td", { class: g.passed ? "passed" : "failed", text: g.passed ? t("gate.passed") : t("gate.failed") }),
      el("td", { class: "num", text: fmt(g.threshold) }), el("td", { class: "num", text: fmt(g.observed) }),
      el("td", { text: g.detail || "" })))));
}

async function ask(ev) {
  ev.preventDefault();
  await guarded($("ask-button"), async () => {
    views.delete("answer");
    $("answer").replaceChildren(el("p", { class: "small", id: "asking", text: t("ask.asking") }));
    const a = await api("/v1/answer", { method: "POST", body: {
      question: $("question").value, valid_at: $("valid-at").value || undefined,
      known_at: $("known-at").value || undefined, generator: $("generator").value } });
    state.lastRunId = a.run_id;
    $("run-id").value = a.run_id;
    view("answer", () => renderAnswer(a));
  });
  if ($("asking")) $("answer").replaceChildren();
}

// ---------- History ----------

const hue = (i, n) => Math.round((360 * i) / Math.max(n, 1));

function renderTimeline(assertions) {
  const W = 760, H = 300, L = 70, R = 20, T = 15, B = 45;
  const now = Date.now();
  const at = (s) => (s ? Date.parse(s) : null);  // not t: that is the message lookup
  const vs = [], ts = [];
  for (const a of assertions) {
    vs.push(at(a.valid_from)); if (a.valid_to) vs.push(at(a.valid_to));
    ts.push(at(a.tx_from)); if (a.tx_to) ts.push(at(a.tx_to));
  }
  if (state.probeDate) { vs.push(at(state.probeDate)); ts.push(at(state.probeDate)); }
  ts.push(now);
  const span = (arr) => { const lo = Math.min(...arr), hi = Math.max(...arr); const pad = Math.max((hi - lo) * 0.08, 864e5 * 60); return [lo - pad / 4, hi + pad]; };
  const [v0, v1] = span(vs), [t0, t1] = span(ts);
  const x = (ms) => L + ((ms - v0) / (v1 - v0)) * (W - L - R);
  const y = (ms) => H - B - ((ms - t0) / (t1 - t0)) * (H - T - B);
  const root = svg("svg", { class: "timeline", id: "timeline", viewBox: `0 0 ${W} ${H}`, width: W, height: H, role: "group",
    "aria-label": t("timeline.label") });
  // year grid
  const yr = (ms) => new Date(ms).getUTCFullYear();
  for (let Y = yr(v0); Y <= yr(v1) + 1; Y++) {
    const ms = Date.UTC(Y, 0, 1); if (ms < v0 || ms > v1) continue;
    root.append(svg("line", { class: "grid", x1: x(ms), x2: x(ms), y1: T, y2: H - B }),
      svg("text", { x: x(ms) - 12, y: H - B + 14, text: String(Y) }));
  }
  for (let Y = yr(t0); Y <= yr(t1) + 1; Y++) {
    const ms = Date.UTC(Y, 0, 1); if (ms < t0 || ms > t1) continue;
    root.append(svg("line", { class: "grid", x1: L, x2: W - R, y1: y(ms), y2: y(ms) }),
      svg("text", { x: L - 34, y: y(ms) + 3, text: String(Y) }));
  }
  root.append(svg("line", { class: "axis", x1: L, x2: W - R, y1: H - B, y2: H - B }),
    svg("line", { class: "axis", x1: L, x2: L, y1: T, y2: H - B }),
    svg("text", { x: (L + W) / 2 - 40, y: H - 8, text: t("timeline.valid") }),
    svg("text", { x: 6, y: T + 10, text: t("timeline.known") }));
  const versions = [...new Set(assertions.map((a) => a.version_id))];
  for (const a of assertions) {
    const vx0 = x(at(a.valid_from)), vx1 = x(a.valid_to ? at(a.valid_to) : v1);
    const ty0 = y(at(a.tx_from)), ty1 = y(a.tx_to ? at(a.tx_to) : t1);
    const i = versions.indexOf(a.version_id);
    const label = t("timeline.assertion", { id: String(a.assertion_id), version: `${a.version_id.slice(0, 14)}…`,
      from: day(a.valid_from), to: day(a.valid_to), known_from: day(a.tx_from), known_to: day(a.tx_to) });
    const open = () => guarded(null, () => openVersion(a.version_id, null, a));
    const rect = svg("rect", {
      class: "assertion" + (!a.valid_to || !a.tx_to ? " open-ended" : ""),
      x: vx0, y: ty1, width: Math.max(vx1 - vx0, 2), height: Math.max(ty0 - ty1, 2),
      fill: `hsl(${hue(i, versions.length)} 60% 60%)`, tabindex: 0, role: "button",
      "aria-label": label, "data-assertion": a.assertion_id, "data-version": a.version_id,
      onclick: open, onkeydown: (ev) => { if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); open(); } },
    }, svg("title", { text: label }));
    root.append(rect);
  }
  if (state.probeDate) {
    const ms = at(state.probeDate);
    root.append(svg("circle", { class: "probe", cx: x(ms), cy: y(ms), r: 5 }, svg("title", { text: t("timeline.probe", { date: date(state.probeDate) }) })));
  }
  return root;
}

function renderHistory() {
  const box = $("history");
  const as = state.assertions;
  box.replaceChildren();
  if (!as.length) { box.append(el("p", { text: t("history.empty") })); return; }
  const versions = [...new Set(as.map((a) => a.version_id))];
  box.append(el("h2", { text: t("history.title", { key: state.historyKey }) }), renderTimeline(as),
    el("p", { class: "legend", text: t("history.legend") }),
    el("table", { id: "history-table" },
      el("thead", {}, el("tr", {}, ["#", t("label.version"), t("col.valid_from"), t("col.valid_to"), t("col.known_from"), t("col.known_to"), t("col.provenance"), t("col.ended"), ""].map((h) => el("th", { text: h })))),
      el("tbody", {}, as.map((a) => el("tr", {},
        el("td", { text: a.assertion_id }),
        el("td", {}, el("span", { class: "mono", title: a.version_id, text: t("version.short", { n: versions.indexOf(a.version_id) + 1, id: `${a.version_id.slice(0, 14)}…` }) })),
        el("td", { text: day(a.valid_from) }), el("td", { text: day(a.valid_to) }),
        el("td", { text: day(a.tx_from) }), el("td", { text: day(a.tx_to) }),
        el("td", { text: a.provenance?.kind ? code("provenance", a.provenance.kind) : "" }),
        el("td", { text: ended(a) }),
        el("td", {}, el("button", { type: "button", class: "open-version", "data-assertion": a.assertion_id,
          onclick: () => guarded(null, () => openVersion(a.version_id, null, a)) }, t("button.open_version"))))))),
    compareForm(versions),
    // Hook for changes.js: every change of this document since before its first record.
    el("button", { type: "button", id: "history-changes", onclick: () => document.dispatchEvent(
      new CustomEvent("stichtag:changes", { detail: { document: state.historyKey,
        knownFrom: as.map((a) => a.tx_from).sort()[0] } })) }, t("history.changes")));
}

// How an assertion ended (a code, translated) and the reason given (the user's words).
export const ended = (a) => [a.ended ? code("ended", a.ended) : null, a.ended_reason].filter(Boolean).join(": ");

// A sentence-level diff of two versions, computed by the server (GET /v1/versions/{a}/diff,
// the same rule as the knowledge diff): sentences match by hash, so unchanged ones line up
// even when offsets moved; a changed sentence shows as its old and its new line.
function compareForm(versions) {
  const pick = (id, n) => el("select", { id, "aria-label": id === "diff-a" ? t("diff.older") : t("diff.newer") },
    versions.map((v, i) => el("option", { value: v, text: t("version.short", { n: i + 1, id: `${v.slice(0, 14)}…` }), selected: i === n })));
  const out = el("div", { id: "diff", "aria-live": "polite" });
  const older = pick("diff-a", Math.max(0, versions.length - 2)), newer = pick("diff-b", versions.length - 1);
  const form = el("form", { id: "diff-form", class: "form-row" },
    el("label", { for: "diff-a", text: t("diff.compare") }), older,
    el("label", { for: "diff-b", text: t("diff.with") }), newer,
    el("button", { id: "diff-button", type: "submit" }, t("diff.button")));
  form.addEventListener("submit", (ev) => { ev.preventDefault(); guarded($("diff-button"), () => showDiff(out)); });
  // Drawn again (a language switch, a "what did we know" probe): keep the diff on screen.
  if (state.diff) {
    older.value = state.diff.a;
    newer.value = state.diff.b;
    drawDiff(out, state.diff.d);
  }
  return el("div", {}, el("h3", { text: t("diff.title") }), form, out);
}

async function showDiff(out) {
  const a = $("diff-a").value, b = $("diff-b").value;
  const q = new URLSearchParams({ to_version_id: b });
  const { diff: d } = await api(`/v1/versions/${encodeURIComponent(a)}/diff?${q}`);
  state.diff = { a, b, d };
  drawDiff(out, d);
}

function drawDiff(out, d) {
  const line = (cls, s, sign) => el("li", { class: cls, title: (s.heading_path || []).join(" › "), text: `${sign} ${s.text}` });
  const rows = d.sentences.flatMap((c) => c.op === "changed" ? [line("removed", c.old, "−"), line("added", c.new, "+")]
    : [c.op === "added" ? line("added", c.new, "+") : line("removed", c.old, "−")]);
  out.replaceChildren(el("p", { id: "diff-summary", text: t("diff.summary", { unchanged: d.unchanged, added: d.added, removed: d.removed, changed: d.changed })
    + (d.truncated ? " " + t("diff.truncated", { n: d.sentences.length }) : "") }),
    el("ul", { class: "diff" }, rows));
}

async function showHistory(ev) {
  ev.preventDefault();
  await guarded($("history-button"), async () => {
    const key = $("history-key").value.trim();
    const h = await api(`/v1/documents/${encodeURIComponent(key)}/history`);
    state.historyKey = key; state.assertions = h.assertions; state.probeDate = null; state.diff = null;
    views.delete("knew");
    view("history", renderHistory);
    $("knew-form").hidden = false;
    if (!$("knew-date").value) $("knew-date").value = today();
    $("knew").replaceChildren();
  });
}

async function whatDidWeKnow(ev) {
  ev.preventDefault();
  const probe = $("knew-date").value;
  const box = $("knew");
  await guarded($("knew-button"), async () => {
    state.probeDate = probe;
    view("history", renderHistory);
    try {
      const d = await api(`/v1/documents/${encodeURIComponent(state.historyKey)}?valid_at=${probe}&known_at=${probe}`);
      view("knew", () => box.replaceChildren(el("p", { id: "knew-result", "data-version": d.version_id },
        t("knew.result", { date: day(probe) }), " ", el("code", { text: d.version_id }), " ",
        t("knew.result.detail", { id: String(d.assertion.assertion_id), from: day(d.assertion.valid_from), to: day(d.assertion.valid_to),
          recorded: day(d.assertion.tx_from) }), " ",
        el("button", { type: "button", onclick: () => guarded(null, () => openVersion(d.version_id, null, d.assertion)) }, t("button.open_version")))));
    } catch (err) {
      if (err instanceof ApiError && err.status === 404) {
        const key = state.historyKey;
        view("knew", () => box.replaceChildren(el("p", { id: "knew-result", "data-version": "",
          text: t("knew.none", { date: day(probe), key }) })));
      } else throw err;
    }
  });
}

// ---------- Runs ----------

function renderRun(r) {
  const rec = r.record || {};
  const box = $("run");
  const th = rec.thresholds || {};
  const cands = rec.candidates || [];
  box.replaceChildren(
    el("h2", { text: t("run.title", { id: r.run_id }) }),
    el("dl", { class: "meta" },
      el("dt", { text: t("run.kind") }), el("dd", { id: "run-kind", "data-kind": r.kind, text: code("kind", r.kind) }),
      el("dt", { text: t("run.created") }), el("dd", { id: "run-created", title: r.created_at, text: dateTime(r.created_at) }),
      el("dt", { text: t("run.key") }), el("dd", { text: r.key_id }),
      el("dt", { text: t("run.asof") }), el("dd", { text: t("run.asof.value", {
        valid: rec.as_of?.valid_at ? dateTime(rec.as_of.valid_at) : "—", known: rec.as_of?.known_at ? dateTime(rec.as_of.known_at) : "—" }) }),
      el("dt", { text: t("ask.question") }), el("dd", { text: rec.request?.question || rec.request?.query || "—" }),
      el("dt", { text: t("run.thresholds") }), el("dd", { text: t("run.thresholds.value", { version: String(th.version ?? "?"), theta: fmt(th.theta_rel, 2), tau: fmt(th.tau, 2) }) }),
      el("dt", { text: t("run.result") }), el("dd", { text: rec.result?.status ? code("status", rec.result.status) : "—" })),
    el("h3", { text: t("run.gates") }), gatesTable(rec.gates, "run-gates"),
    el("h3", { text: t("run.candidates", { n: cands.length }) }),
    el("table", { id: "run-candidates" },
      el("thead", {}, el("tr", {}, [t("label.document"), t("col.passage"), t("version.offsets"), "BM25", t("col.vector"), t("col.fused"), t("col.rerank"), t("col.calibrated")].map((h) => el("th", { text: h })))),
      el("tbody", {}, cands.map((c) => el("tr", {},
        el("td", { text: c.document }), el("td", { class: "num", text: c.passage }),
        el("td", { class: "num", text: `${c.start}–${c.end}` }),  // offsets: positions, not quantities
        ...["bm25", "vector", "fused", "rerank", "calibrated"].map((k) => el("td", { class: "num", text: fmt(c[k]) })))))));
}

async function openRun(ev) {
  ev?.preventDefault();
  await guarded($("run-button"), async () => {
    const id = $("run-id").value.trim();
    const run = await api(`/v1/runs/${encodeURIComponent(id)}`);
    view("run", () => renderRun(run));
  });
}

function verdictStatus(v) {
  return v.status || (v.reproduced ? "reproduced" : "differs");
}

async function replay() {
  await guarded($("replay-button"), async () => {
    const id = $("run-id").value.trim();
    if (!id) { showMessage(() => t("runs.enter_id")); return; }
    views.delete("verdict");
    $("verdict").replaceChildren(el("p", { class: "small", text: t("replay.running") }));
    const v = await api(`/v1/runs/${encodeURIComponent(id)}/replay`, { method: "POST" });
    // "erased": a version the run relied on was erased (GDPR); not a mismatch.
    const verdict = verdictStatus(v);
    view("verdict", () => $("verdict").replaceChildren(el("div", { class: "verdict" },
      el("strong", { text: t("replay.verdict") }), " ",
      el("span", { id: "verdict-status", class: `status ${verdict}`, "data-status": verdict, text: t(`replay.${verdict}`) }),
      v.differences.length ? el("ul", { id: "verdict-differences" }, v.differences.map((d) => el("li", { text: typeof d === "string" ? d : JSON.stringify(d) }))) : el("p", { class: "small", text: t("replay.no_differences") }),
      v.notes.length ? el("ul", { class: "small" }, v.notes.map((d) => el("li", { text: t("replay.note", { note: typeof d === "string" ? d : JSON.stringify(d) }) }))) : null)));
  });
}

// ---------- log verification in the browser ----------

// RFC 8785 (JCS): JSON.stringify already writes numbers as ECMAScript Number::toString and
// strings with the JCS escapes; objects need keys sorted by UTF-16 code units, which is
// exactly what the default Array.prototype.sort does for strings.
export function canonicalize(v) {
  if (v === null) return "null";
  switch (typeof v) {
    case "boolean": return v ? "true" : "false";
    case "number":
      if (!Number.isFinite(v)) throw new Error(t("log.non_finite"));
      return JSON.stringify(v);
    case "string": return JSON.stringify(v);
    case "object":
      if (Array.isArray(v)) return "[" + v.map(canonicalize).join(",") + "]";
      return "{" + Object.keys(v).sort().map((k) => JSON.stringify(k) + ":" + canonicalize(v[k])).join(",") + "}";
    default: throw new Error(t("log.no_json", { type: typeof v }));
  }
}

const enc = new TextEncoder();
async function sha256(...parts) {
  const len = parts.reduce((n, p) => n + p.length, 0);
  const buf = new Uint8Array(len);
  let o = 0;
  for (const p of parts) { buf.set(p, o); o += p.length; }
  return new Uint8Array(await crypto.subtle.digest("SHA-256", buf));
}
const leafHash = (bytes) => sha256(Uint8Array.of(0), bytes);
const nodeHash = (l, r) => sha256(Uint8Array.of(1), l, r);

async function merkleRoot(leaves, lo = 0, hi = leaves.length) {
  if (hi === lo) return sha256(new Uint8Array(0));
  if (hi - lo === 1) return leaves[lo];
  let k = 1;
  while (k * 2 < hi - lo) k *= 2; // largest power of two strictly smaller than n
  return nodeHash(await merkleRoot(leaves, lo, lo + k), await merkleRoot(leaves, lo + k, hi));
}

const b64 = (bytes) => btoa(String.fromCharCode(...bytes));
const unb64 = (s) => Uint8Array.from(atob(s), (c) => c.charCodeAt(0));
const eq = (a, b) => a.length === b.length && a.every((x, i) => x === b[i]);

function parseNote(note) {
  const cut = note.indexOf("\n\n");
  if (cut < 0) throw new Error(t("log.not_a_note"));
  const body = note.slice(0, cut + 1);
  const lines = body.split("\n");
  const sigs = note.slice(cut + 2).split("\n").filter(Boolean).map((l) => {
    const m = /^— (\S+) (\S+)$/.exec(l);
    return m ? { name: m[1], blob: unb64(m[2]) } : null;
  }).filter(Boolean);
  return { body, origin: lines[0], size: Number(lines[1]), root: unb64(lines[2]), sigs };
}

async function verifySignature(cp, pem) {
  const der = unb64(pem.replace(/-----[^-]+-----/g, "").replace(/\s+/g, ""));
  const raw = der.slice(der.length - 32);
  let key;
  try {
    key = await crypto.subtle.importKey("spki", der, { name: "Ed25519" }, false, ["verify"]);
  } catch {
    return null; // this browser has no Ed25519 in WebCrypto
  }
  for (const s of cp.sigs) {
    const id = (await sha256(enc.encode(s.name + "\n"), Uint8Array.of(1), raw)).slice(0, 4);
    if (!eq(id, s.blob.slice(0, 4))) continue;
    if (await crypto.subtle.verify({ name: "Ed25519" }, key, s.blob.slice(4), enc.encode(cp.body))) return true;
  }
  return false;
}

export async function verifyLog() {
  const problems = [];
  // Checkpoint first, then the export: the log may only grow in between, so the fresh
  // checkpoint must describe a prefix of the exported log.
  const fresh = await api("/v1/log/checkpoint");
  const text = await api("/v1/log/export", { raw: true });
  const lines = text.split("\n").filter((l) => l.length);
  const header = JSON.parse(lines[0] || "{}");
  if (header.format !== "stichtag-log-export/1") problems.push(t("log.p.format", { format: String(header.format) }));
  const last = JSON.parse(lines[lines.length - 1] || "{}");
  if (typeof last.checkpoint !== "string") problems.push(t("log.p.no_checkpoint"));
  const leaves = [];
  let nonCanonical = 0;
  for (let i = 1; i < lines.length - 1; i++) {
    const obj = JSON.parse(lines[i]);
    if (obj.seq !== leaves.length) problems.push(t("log.p.seq", { line: i + 1, seq: obj.seq, expected: leaves.length }));
    const canon = canonicalize(obj.record);
    // "texts" (sealed texts still held) lie outside the leaf; `stichtag log verify` opens them
    const texts = obj.texts === undefined ? "" : `,"texts":${canonicalize(obj.texts)}`;
    if (`{"record":${canon},"seq":${obj.seq}${texts}}` !== lines[i]) nonCanonical += 1;
    leaves.push(await leafHash(enc.encode(canon)));
  }
  const size = leaves.length;
  const root = await merkleRoot(leaves);
  const exported = parseNote(last.checkpoint || "");
  if (exported.size !== size) problems.push(t("log.p.export_size", { exported: exported.size, size }));
  if (!eq(exported.root, root)) problems.push(t("log.p.export_root"));
  if (`stichtag/${header.tenant}` !== exported.origin || header.origin !== exported.origin) problems.push(t("log.p.origin"));
  const cp = parseNote(fresh.checkpoint);
  let prefixOk = true;
  if (cp.size > size) { problems.push(t("log.p.size", { size: cp.size, exported: size })); prefixOk = false; }
  else if (!eq(await merkleRoot(leaves, 0, cp.size), cp.root)) { problems.push(t("log.p.prefix_root", { size: cp.size })); prefixOk = false; }
  if (b64(cp.root) !== fresh.root || cp.size !== fresh.size) problems.push(t("log.p.fields"));
  const sigFresh = await verifySignature(cp, fresh.public_key);
  const sigExport = await verifySignature(exported, fresh.public_key);
  if (sigFresh === false) problems.push(t("log.p.signature"));
  if (sigExport === false) problems.push(t("log.p.export_signature"));
  // signature: "unchecked" (no Ed25519 in this browser), "valid" or "invalid".
  return { ok: problems.length === 0, problems, size, root: b64(root), checkpointSize: cp.size, prefixOk,
    signature: sigFresh === null ? "unchecked" : sigFresh && sigExport ? "valid" : "invalid",
    nonCanonical };
}

async function verifyClicked() {
  await guarded($("verify-button"), async () => {
    views.delete("verify");
    $("verify").replaceChildren(el("p", { class: "small", text: t("log.verifying") }));
    const r = await verifyLog();
    // The problems were worded in the language of the check; everything else follows a switch.
    view("verify", () => $("verify").replaceChildren(el("div", { class: "verdict" },
      el("span", { id: "verify-status", class: `status ${r.ok ? "pass" : "fail"}`, "data-status": r.ok ? "pass" : "fail",
        text: r.ok ? t("log.pass") : t("log.fail") }),
      " ", el("span", { id: "verify-size", "data-size": r.size, text: t("log.size", { size: r.size }) }),
      el("dl", { class: "meta" },
        el("dt", { text: t("log.root") }), el("dd", {}, el("code", { id: "verify-root", text: r.root })),
        el("dt", { text: t("log.fresh") }), el("dd", { text: t("log.fresh.value", { size: r.checkpointSize, matches: r.prefixOk ? t("word.yes") : t("word.no") }) }),
        el("dt", { text: t("log.signature") }), el("dd", { id: "verify-signature", "data-signature": r.signature, text: t(`log.signature.${r.signature}`) }),
        el("dt", { text: t("log.non_canonical") }), el("dd", { text: num(r.nonCanonical) })),
      r.problems.length ? el("ul", { id: "verify-problems" }, r.problems.map((p) => el("li", { class: "failed", text: p }))) : null)));
  });
}

// ---------- wiring ----------

function init() {
  $("signin-form").addEventListener("submit", signIn);
  $("lang-select").value = currentLang();
  $("lang-select").addEventListener("change", (ev) => setLang(ev.target.value));
  document.addEventListener("stichtag:lang", () => {
    setSignedIn(Boolean(sessionStorage.getItem(KEY_STORE)));
    if (lastMessage) showMessage(lastMessage.text, lastMessage.kind);
    for (const draw of views.values()) draw();
  });
  $("signout-button").addEventListener("click", signOut);
  for (const tabName of TABS) {
    $(`tab-${tabName}`).addEventListener("click", () => selectTab(tabName));
    $(`tab-${tabName}`).addEventListener("keydown", tabKeys);
  }
  $("valid-at").value = today();
  $("known-at").value = today();
  $("ask-form").addEventListener("submit", ask);
  $("history-form").addEventListener("submit", showHistory);
  $("knew-form").addEventListener("submit", whatDidWeKnow);
  $("run-form").addEventListener("submit", openRun);
  $("replay-button").addEventListener("click", replay);
  $("verify-button").addEventListener("click", verifyClicked);
  $("version-close").addEventListener("click", closePanel);
  document.addEventListener("keydown", (ev) => { if (ev.key === "Escape" && !$("version-panel").hidden) closePanel(); });
  setSignedIn(Boolean(sessionStorage.getItem(KEY_STORE)));
  document.body.dataset.ready = "yes";
}

init();

// For page modules loaded beside this one (review.js).
export { showMessage };
