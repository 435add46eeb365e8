// stichtag auditor console: one question at two Stichtage side by side, with the cause of
// every change (POST /v1/answer/compare), and the receipt of a shown answer. Everything is
// computed by the server; this module only renders it (textContent only).

import { api, apiBlob, day, el, guarded, openVersion } from "./console.js";
import { code, t, translateTree } from "./i18n.js";

const $ = (id) => document.getElementById(id);
const short = (v) => (v ? `${v.slice(0, 14)}…` : "—");
let last = null;  // the comparison on screen, drawn again after a language switch

function buildForm() {
  const panel = $("panel-ask");
  const date = (id, label) => [el("label", { for: id, "data-i18n": label }),
    el("input", { id, type: "date" })];
  panel.append(
    el("h2", { "data-i18n": "compare.title" }),
    el("p", { class: "hint", "data-i18n": "compare.hint" }),
    el("form", { id: "compare-form", class: "form-grid" },
      ...date("compare-from-valid", "compare.from_valid"), ...date("compare-from-known", "compare.from_known"),
      ...date("compare-to-valid", "compare.to_valid"), ...date("compare-to-known", "compare.to_known"),
      el("span"), el("button", { id: "compare-button", type: "submit", "data-i18n": "compare.button" })),
    el("div", { id: "compare", class: "answer", "aria-live": "polite" }));
  translateTree(panel);
  $("compare-form").addEventListener("submit", (ev) => { ev.preventDefault(); compare(); });
}

const pair = (valid, known) => ({ valid_at: $(valid).value || undefined, known_at: $(known).value || undefined });

async function compare() {
  await guarded($("compare-button"), async () => {
    last = null;
    $("compare").replaceChildren(el("p", { class: "small", text: t("word.loading") }));
    try {
      last = await api("/v1/answer/compare", { method: "POST", body: {
        question: $("question").value, generator: $("generator").value,
        from: pair("compare-from-valid", "compare-from-known"), to: pair("compare-to-valid", "compare-to-known") } });
      render(last);
    } catch (err) {
      $("compare").replaceChildren();
      throw err;
    }
  });
}

function side(name, a) {
  return el("div", { class: "compare-side", "data-side": name, "data-status": a.status },
    el("h3", { text: t(name === "from" ? "compare.side.from" : "compare.side.to",
      { valid: day(a.as_of.valid_at), known: day(a.as_of.known_at) }) }),
    el("p", {}, el("span", { class: `status ${a.status}`, text: code("status", a.status) }),
      a.reason ? " " + code("reason", a.reason) : ""),
    el("ol", {}, a.sentences.map((s) => el("li", {}, s.text,
      s.citations.map((c) => el("button", { type: "button", class: "chip", title: c.version_id,
        onclick: () => guarded(null, () => openVersion(c.version_id, c)) }, `${c.document} ${c.start}–${c.end}`))))),
    receiptButtons(a.run_id));
}

function changeItem(c) {
  return el("li", { class: "compare-change", "data-document": c.document, "data-kind": c.kind, "data-cause": c.cause },
    el("strong", { text: c.document }), " ",
    el("span", { class: "chip", text: code("compare.kind", c.kind) }), " ",
    el("span", { class: "chip", text: code("compare.cause", c.cause) }), " ",
    el("span", { class: "mono", text: `${short(c.from_version)} → ${short(c.to_version)}` }),
    c.explanation ? el("p", { class: "small", text: c.explanation }) : null,
    c.diff ? el("p", { class: "small", text: t("changes.pair.counts", { added: c.diff.added, removed: c.diff.removed, changed: c.diff.changed, unchanged: c.diff.unchanged }) }) : null);
}

function render(data) {
  $("compare").replaceChildren(
    el("p", { id: "compare-summary", "data-run": data.run_id, text: data.summary }),
    el("div", { class: "compare-sides" }, side("from", data.from), side("to", data.to)),
    el("h3", { text: t("compare.changes") }),
    data.changes.length ? el("ul", { id: "compare-changes" }, data.changes.map(changeItem))
      : el("p", { text: t("compare.none") }));
}

// The receipt of a recorded answer: the printable page and the JSON that verifies offline.
async function download(runId, kind) {
  const html = kind === "html";
  const blob = await apiBlob(`/v1/runs/${encodeURIComponent(runId)}/receipt${html ? "/html" : ""}`);
  const a = el("a", { href: URL.createObjectURL(blob), download: `receipt-${runId.slice(0, 8)}.${html ? "html" : "json"}` });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 10_000);
}

export function receiptButtons(runId) {
  return el("p", { class: "receipt" },
    el("button", { type: "button", class: "receipt-html", onclick: (ev) => guarded(ev.target, () => download(runId, "html")) }, t("receipt.html")), " ",
    el("button", { type: "button", class: "receipt-json", onclick: (ev) => guarded(ev.target, () => download(runId, "json")) }, t("receipt.json")));
}

// Under every answer the Ask tab shows (console.js draws it; this adds the receipt).
new MutationObserver(() => {
  const box = $("answer");
  const id = $("answer-run-id")?.textContent;
  if (id && !box.querySelector(":scope > p.receipt")) box.append(receiptButtons(id));
}).observe($("answer"), { childList: true });

document.addEventListener("stichtag:lang", () => { if (last) render(last); });

buildForm();
