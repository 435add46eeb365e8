// Support review: draw a sample, judge each answer sentence against its Fundstelle (shown in
// the shared source-version panel, quote highlighted), and read the report.
// Keys: 1-4 or f/p/n/c record full/partial/none/contradicts; j/→ next, k/← previous.

import { api, el, guarded, openVersion, showMessage } from "./console.js";

const $ = (id) => document.getElementById(id);
const LEVELS = ["full", "partial", "none", "contradicts"];
const KEYS = { 1: "full", 2: "partial", 3: "none", 4: "contradicts",
  f: "full", p: "partial", n: "none", c: "contradicts" };
const STRATA = ["document", "generator", "coverage", "run_month", "asof_year"];
const review = { sample: null, index: 0 };

function build() {
  const panel = $("panel-review");
  const strata = STRATA.map((s) => el("label", { class: "small" },
    el("input", { type: "checkbox", name: "strata", value: s, id: `review-stratum-${s}` }), ` ${s}`));
  panel.append(
    el("form", { id: "review-form", class: "form-row" },
      el("label", { for: "review-seed", text: "Seed" }),
      el("input", { id: "review-seed", type: "number", min: "0", value: "1", required: true, size: "8" }),
      el("span", { class: "small", text: "Strata:" }), ...strata,
      el("label", { for: "review-n", text: "Pairs per stratum" }),
      el("input", { id: "review-n", type: "number", min: "1", max: "500", value: "20", size: "5" }),
      el("button", { id: "review-draw", type: "submit", text: "Draw sample" })),
    el("div", { class: "form-row" },
      el("label", { for: "review-open-id", text: "Sample id" }),
      el("input", { id: "review-open-id", type: "text", size: "38", spellcheck: "false" }),
      el("button", { id: "review-open", type: "button", text: "Open sample" }),
      el("button", { id: "review-report-button", type: "button", text: "Report" })),
    el("p", { class: "hint", text: "Keys: 1–4 or f/p/n/c record full / partial / none / contradicts; "
      + "j or → next, k or ← previous. The Fundstelle opens beside the sentence." }),
    el("div", { id: "review-queue", "aria-live": "polite" }),
    el("div", { id: "review-report", "aria-live": "polite" }));
  $("review-form").addEventListener("submit", draw);
  $("review-open").addEventListener("click", () => guarded($("review-open"), () => load($("review-open-id").value.trim())));
  $("review-report-button").addEventListener("click", () => guarded($("review-report-button"), report));
  document.addEventListener("keydown", keys);
}

async function draw(ev) {
  ev.preventDefault();
  await guarded($("review-draw"), async () => {
    const strata = [...document.querySelectorAll("#review-form input[name=strata]:checked")].map((i) => i.value);
    const made = await api("/v1/review/samples", { method: "POST", body: {
      seed: Number($("review-seed").value), strata, n: Number($("review-n").value) } });
    await load(made.sample_id);
  });
}

async function load(sampleId, index = 0) {
  review.sample = await api(`/v1/review/samples/${encodeURIComponent(sampleId)}`);
  review.index = Math.min(index, Math.max(0, review.sample.items.length - 1));
  $("review-open-id").value = review.sample.sample_id;
  $("review-report").replaceChildren();
  await show();
}

async function show() {
  const q = $("review-queue");
  const s = review.sample;
  q.replaceChildren();
  if (!s.items.length) {
    q.append(el("p", { id: "review-empty", text: "The sample is empty: no delivered answer sentences to review." }));
    return;
  }
  const item = s.items[review.index];
  const judged = s.items.filter((i) => i.verdict).length;
  const current = item.verdict;
  const c = item.citation;
  q.append(
    el("p", { class: "small" }, el("span", { id: "review-position", text: `Item ${item.item} of ${s.items.length}` }),
      ` · ${judged} judged · stratum `, el("code", { text: item.stratum }),
      " · run ", el("code", { text: item.run_id })),
    el("h3", { text: "Answer sentence" }),
    el("blockquote", { id: "review-sentence", class: "review-sentence", text: item.sentence }),
    el("p", { class: "small" }, "Cited: ", el("strong", { text: c.document }), " › ",
      (c.heading_path || []).join(" › ") || "(no heading)", ` [${c.start}, ${c.end})`),
    el("p", { id: "review-current", class: "small",
      text: current ? `Current verdict: ${current.verdict}${current.note ? " — " + current.note : ""}` : "Not judged yet" }),
    el("label", { for: "review-note", class: "small", text: "Note (optional)" }),
    el("textarea", { id: "review-note", rows: "2", cols: "60", maxlength: "2000" }),
    el("div", { class: "form-row" },
      ...LEVELS.map((level, i) => el("button", { type: "button", id: `review-${level}`,
        class: `verdict-button ${level}`, "aria-pressed": current?.verdict === level ? "true" : "false",
        onclick: () => record(level) }, `${level} (${i + 1})`)),
      el("button", { type: "button", id: "review-prev", onclick: () => move(-1), text: "← Previous" }),
      el("button", { type: "button", id: "review-next", onclick: () => move(1), text: "Next →" })));
  await guarded(null, () => openVersion(c.version_id, c));
}

async function record(level) {
  const item = review.sample.items[review.index];
  const note = $("review-note").value.trim();
  await guarded(null, async () => {
    const v = await api("/v1/review/verdicts", { method: "POST", body: {
      sample_id: review.sample.sample_id, item: item.item, verdict: level,
      note: note || null, supersedes: item.verdict ? item.verdict.verdict_id : null } });
    item.verdict = { verdict_id: v.verdict_id, verdict: v.verdict, note: v.note };
    showMessage(`Recorded ${v.verdict} for item ${v.item} (log seq ${v.seq}).`, "info");
    if (review.index < review.sample.items.length - 1) review.index += 1;
    await show();
  });
}

async function move(step) {
  const n = review.sample.items.length;
  review.index = Math.min(n - 1, Math.max(0, review.index + step));
  await show();
}

function keys(ev) {
  if ($("panel-review").hidden || !review.sample?.items.length) return;
  if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
  if (["INPUT", "TEXTAREA", "SELECT"].includes(ev.target.tagName)) return;
  if (ev.target.getAttribute?.("role") === "tab") return;  // arrows switch tabs there
  const level = KEYS[ev.key];
  if (level) record(level);
  else if (ev.key === "j" || ev.key === "ArrowRight") move(1);
  else if (ev.key === "k" || ev.key === "ArrowLeft") move(-1);
  else return;
  ev.preventDefault();
}

function rate(r) {
  const ci = r.ci95 ? ` (95 % CI ${r.ci95[0].toFixed(2)}–${r.ci95[1].toFixed(2)})` : "";
  return `${r.statement}${ci}`;
}

async function report() {
  const id = review.sample?.sample_id || $("review-open-id").value.trim();
  const r = await api(`/v1/review/samples/${encodeURIComponent(id)}/report`);
  const rows = [r.overall, ...r.strata].map((s) => el("tr", { "data-stratum": s.stratum },
    el("td", { text: s.stratum }), el("td", { class: "pairs", text: rate(s.pairs) }),
    el("td", { class: "sentences", text: rate(s.sentences) }),
    ...LEVELS.map((l) => el("td", { class: `num ${l}`, text: String(s.verdicts[l]) })),
    el("td", { class: "num unreviewed", text: String(s.pairs_unreviewed) })));
  const failures = r.failures.map((f) => el("li", {},
    el("strong", { text: f.verdict }), ` item ${f.item}: “${f.sentence_text}” — run `,
    el("code", { text: f.run_id }), ` · ${f.evidence_id} (evidence rank ${f.evidence_rank}, passage rank ${f.passage_rank})`
    + ` · ${f.document} ${f.version_id.slice(0, 15)}… · ${f.generator}${f.note ? " · " + f.note : ""}`));
  $("review-report").replaceChildren(
    el("h2", { text: "Support report" }),
    el("table", { id: "review-report-table" },
      el("thead", {}, el("tr", {}, ...["stratum", "citation pairs", "sentences", ...LEVELS, "unreviewed"]
        .map((h) => el("th", { text: h })))),
      el("tbody", {}, ...rows)),
    el("h3", { text: "Judged none or contradicts" }),
    failures.length ? el("ul", { id: "review-failures" }, ...failures) : el("p", { class: "small", text: "none" }),
    el("p", { class: "hint", text: `${r.rules.pairs}. ${r.rules.sentences}. ${r.rules.ci95}.` }));
}

build();
