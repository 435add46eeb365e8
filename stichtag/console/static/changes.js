// stichtag auditor console: the Changes view (knowledge diff between two transaction times).
// Everything is computed by GET /v1/changes; this module only renders it (textContent only).

import { api, day, el, guarded, openVersion, selectTab } from "./console.js";

const $ = (id) => document.getElementById(id);
const short = (v) => (v ? `${v.slice(0, 14)}…` : "");
const range = (r) => `[${day(r.valid_from)}, ${r.valid_to ? day(r.valid_to) : "∞"})`;
const STATE_LABEL = { new_document: "new document", not_in_force: "nothing in force" };

function buildPanel() {
  const panel = $("panel-changes");
  const field = (id, label, attrs = {}) => [el("label", { for: id, text: label }),
    el("input", { id, type: "text", spellcheck: "false", ...attrs })];
  panel.append(
    el("p", { class: "hint", text: "What changed in what we knew: assertions recorded, ended or corrected after “known after” up to and including “known up to”. Dates are midnight in the tenant's time zone; RFC 3339 times work too." }),
    el("form", { id: "changes-form", class: "form-grid" },
      ...field("changes-from", "Known after", { required: true, placeholder: "YYYY-MM-DD or RFC 3339" }),
      ...field("changes-to", "Known up to", { placeholder: "now" }),
      ...field("changes-document", "Document", { placeholder: "all documents" }),
      el("label", { for: "changes-diff", text: "Sentence diffs" }),
      el("input", { id: "changes-diff", type: "checkbox", checked: true }),
      el("span"), el("button", { id: "changes-button", type: "submit" }, "Show changes")),
    el("div", { id: "changes", "aria-live": "polite" }));
  $("changes-form").addEventListener("submit", (ev) => { ev.preventDefault(); show(); });
}

async function show() {
  await guarded($("changes-button"), async () => {
    const q = new URLSearchParams({ known_from: $("changes-from").value.trim() });
    if ($("changes-to").value.trim()) q.set("known_to", $("changes-to").value.trim());
    if ($("changes-document").value.trim()) q.set("document", $("changes-document").value.trim());
    q.set("diff", $("changes-diff").checked ? "true" : "false");
    $("changes").replaceChildren(el("p", { class: "small", text: "Loading…" }));
    try {
      render(await api(`/v1/changes?${q}`));
    } catch (err) {
      $("changes").replaceChildren();
      throw err;
    }
  });
}

function assertionRows(kind, rows) {
  return rows.map((a) => el("tr", { class: `change-${kind}`, "data-assertion": a.assertion_id },
    el("td", { text: kind }), el("td", { text: a.assertion_id }),
    el("td", {}, el("span", { class: "mono", title: a.version_id, text: short(a.version_id) })),
    el("td", { text: range(a) }),
    el("td", { text: day(kind === "appeared" ? a.tx_from : a.tx_to) }),
    el("td", { text: kind === "appeared" ? a.provenance?.kind || "" : [a.ended, a.ended_reason].filter(Boolean).join(": ") }),
    el("td", {}, el("button", { type: "button", onclick: () => guarded(null, () => openVersion(a.version_id, null, a)) }, "Open version"))));
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
  const from = p.from_version ? short(p.from_version) : STATE_LABEL[p.from_state] || p.from_state;
  const to = p.to_version ? short(p.to_version) : STATE_LABEL[p.to_state] || p.to_state;
  const d = p.diff;
  return el("div", { class: "pair", "data-from": p.from_version || "", "data-to": p.to_version || "" },
    el("p", { class: "pair-head" }, el("strong", { text: `${from} → ${to}` }),
      ` for valid ${p.ranges.map(range).join(", ")}`),
    d ? [el("p", { class: "small pair-counts", text: `${d.added} added, ${d.removed} removed, ${d.changed} changed, ${d.unchanged} unchanged sentences${d.truncated ? ` (first ${d.sentences.length} shown)` : ""}` }),
      el("ul", { class: "diff" }, d.sentences.map(sentenceItem))]
      : el("p", { class: "small", text: "No sentence diff (turned off, or beyond the per-request bound)." }));
}

function render(data) {
  const c = data.counts;
  const w = data.window;
  const box = $("changes");
  box.replaceChildren(el("p", { id: "changes-summary" },
    `Known after ${w.known_from}, up to and including ${w.known_to}: ${c.documents} document${c.documents === 1 ? "" : "s"}, ${c.appeared} appeared, ${c.ended} ended, ${c.corrected} corrected.`));
  if (data.truncated) box.append(el("p", { id: "changes-truncated", class: "message info", text: `Output bounded (at most ${data.limits.limit} assertions, ${data.limits.max_diffs} diffed version pairs, ${data.limits.max_sentences} sentences each); counts are complete. Narrow the window or pick one document.` }));
  if (!data.documents.length) box.append(el("p", { text: "No changes in this window." }));
  for (const d of data.documents) {
    box.append(el("section", { class: "changes-doc", "data-document": d.document },
      el("h3", {}, d.document, d.new_document ? el("span", { class: "chip", text: "new document" }) : null),
      el("table", {}, el("thead", {}, el("tr", {}, ["Change", "#", "Version", "Valid", "Known", "How", ""].map((h) => el("th", { text: h })))),
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

buildPanel();
