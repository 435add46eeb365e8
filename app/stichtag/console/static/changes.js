// stichtag auditor console: the Changes view (knowledge diff between two transaction times).
// Everything is computed by GET /v1/changes; this module only renders it (textContent only).

import { api, day, el, ended, guarded, openVersion, selectTab } from "./console.js";
import { code, dateTime, t, translateTree } from "./i18n.js";

const $ = (id) => document.getElementById(id);
const short = (v) => (v ? `${v.slice(0, 14)}…` : "");
const range = (r) => `[${day(r.valid_from)}, ${r.valid_to ? day(r.valid_to) : "∞"})`;
let last = null;  // the data on screen, drawn again after a language switch

function buildPanel() {
  const panel = $("panel-changes");
  // Labels carry data-i18n keys: a language switch translates them in place.
  const field = (id, label, placeholder, attrs = {}) => [el("label", { for: id, "data-i18n": label }),
    el("input", { id, type: "text", spellcheck: "false", "data-i18n-placeholder": placeholder, ...attrs })];
  panel.append(
    el("p", { class: "hint", "data-i18n": "changes.hint" }),
    el("form", { id: "changes-form", class: "form-grid" },
      ...field("changes-from", "changes.from", "changes.from.placeholder", { required: true }),
      ...field("changes-to", "changes.to", "changes.to.placeholder"),
      ...field("changes-document", "label.document", "changes.document.placeholder"),
      el("label", { for: "changes-diff", "data-i18n": "changes.diffs" }),
      el("input", { id: "changes-diff", type: "checkbox", checked: true }),
      el("span"), el("button", { id: "changes-button", type: "submit", "data-i18n": "changes.button" })),
    el("div", { id: "changes", "aria-live": "polite" }));
  translateTree(panel);
  $("changes-form").addEventListener("submit", (ev) => { ev.preventDefault(); show(); });
}

async function show() {
  await guarded($("changes-button"), async () => {
    const q = new URLSearchParams({ known_from: $("changes-from").value.trim() });
    if ($("changes-to").value.trim()) q.set("known_to", $("changes-to").value.trim());
    if ($("changes-document").value.trim()) q.set("document", $("changes-document").value.trim());
    q.set("diff", $("changes-diff").checked ? "true" : "false");
    last = null;
    $("changes").replaceChildren(el("p", { class: "small", text: t("word.loading") }));
    try {
      last = await api(`/v1/changes?${q}`);
      render(last);
    } catch (err) {
      $("changes").replaceChildren();
      throw err;
    }
  });
}

function assertionRows(kind, rows) {
  return rows.map((a) => el("tr", { class: `change-${kind}`, "data-assertion": a.assertion_id, "data-ended": a.ended || "" },
    el("td", { text: code("change", kind) }), el("td", { text: a.assertion_id }),
    el("td", {}, el("span", { class: "mono", title: a.version_id, text: short(a.version_id) })),
    el("td", { text: range(a) }),
    el("td", { text: day(kind === "appeared" ? a.tx_from : a.tx_to) }),
    el("td", { text: kind === "appeared" ? (a.provenance?.kind ? code("provenance", a.provenance.kind) : "") : ended(a) }),
    el("td", {}, el("button", { type: "button", onclick: () => guarded(null, () => openVersion(a.version_id, null, a)) }, t("button.open_version")))));
}

function sentenceItem(c) {
  if (c.op === "changed") {
    return el("li", { class: "changed" }, el("span", { class: "old", text: `− ${c.old.text}` }),
      el("span", { class: "new", text: `+ ${c.new.text}` }));
  }
  const side = c.op === "added" ? c.new : c.old;
  return el("li", { class: c.op, title: (side.heading_path || []).join(" › "), text: `${c.op === "added" ? "+" : "−"} ${side.text}` });
}

function pairBlock(p) {
  const from = p.from_version ? short(p.from_version) : code("state", p.from_state);
  const to = p.to_version ? short(p.to_version) : code("state", p.to_state);
  const d = p.diff;
  return el("div", { class: "pair", "data-from": p.from_version || "", "data-to": p.to_version || "",
    "data-from-state": p.from_state || "", "data-to-state": p.to_state || "" },
    el("p", { class: "pair-head" }, el("strong", { text: `${from} → ${to}` }),
      " " + t("changes.pair.valid", { ranges: p.ranges.map(range).join(", ") })),
    d ? [el("p", { class: "small pair-counts", text: t("changes.pair.counts", { added: d.added, removed: d.removed, changed: d.changed, unchanged: d.unchanged })
      + (d.truncated ? " " + t("changes.pair.truncated", { n: d.sentences.length }) : "") }),
      el("ul", { class: "diff" }, d.sentences.map(sentenceItem))]
      : el("p", { class: "small", text: t("changes.pair.no_diff") }));
}

function render(data) {
  const c = data.counts;
  const w = data.window;
  const box = $("changes");
  box.replaceChildren(el("p", { id: "changes-summary", "data-documents": c.documents, "data-appeared": c.appeared,
    "data-ended": c.ended, "data-corrected": c.corrected },
    t("changes.summary", { from: dateTime(w.known_from), to: dateTime(w.known_to) }) + " "
    + t(c.documents === 1 ? "changes.documents.one" : "changes.documents.many", { n: c.documents }) + ", "
    + t("changes.counts", { appeared: c.appeared, ended: c.ended, corrected: c.corrected })));
  if (data.truncated) box.append(el("p", { id: "changes-truncated", class: "message info", text: t("changes.truncated", { limit: data.limits.limit, diffs: data.limits.max_diffs, sentences: data.limits.max_sentences }) }));
  if (!data.documents.length) box.append(el("p", { text: t("changes.none") }));
  for (const d of data.documents) {
    box.append(el("section", { class: "changes-doc", "data-document": d.document },
      el("h3", {}, d.document, d.new_document ? el("span", { class: "chip", text: t("state.new_document") }) : null),
      el("table", {}, el("thead", {}, el("tr", {}, [t("changes.col.change"), "#", t("label.version"), t("label.valid"), t("label.known"), t("changes.col.how"), ""].map((h) => el("th", { text: h })))),
        el("tbody", {}, assertionRows("appeared", d.appeared), assertionRows("ended", d.ended), assertionRows("corrected", d.corrected))),
      d.pairs.map(pairBlock)));
  }
}

// From the history page: every change of one document since just before its first record.
document.addEventListener("stichtag:changes", (ev) => {
  const { document: key, knownFrom } = ev.detail || {};
  $("changes-document").value = key || "";
  $("changes-from").value = knownFrom ? new Date(Date.parse(knownFrom) - 1).toISOString() : "";
  $("changes-to").value = "";
  selectTab("changes", true);
  if (knownFrom) show();
});

document.addEventListener("stichtag:lang", () => { if (last) render(last); });

buildPanel();
