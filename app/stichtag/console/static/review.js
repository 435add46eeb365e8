// Support review: draw a sample, judge each answer sentence against its Fundstelle (shown in
// the shared source-version panel, quote highlighted), and read the report.
// Keys: 1-4 or f/p/n/c record full/partial/none/contradicts; j/→ next, k/← previous.

import { api, el, guarded, openVersion, showMessage } from "./console.js";
import { code, num, t, translateTree } from "./i18n.js";

const $ = (id) => document.getElementById(id);
const LEVELS = ["full", "partial", "none", "contradicts"];
const KEYS = { 1: "full", 2: "partial", 3: "none", 4: "contradicts",
  f: "full", p: "partial", n: "none", c: "contradicts" };
const STRATA = ["document", "generator", "coverage", "run_month", "asof_year"];
const review = { sample: null, index: 0, report: null };

function build() {
  const panel = $("panel-review");
  // Static labels carry data-i18n keys: a language switch translates them in place.
  const strata = STRATA.map((s) => el("label", { class: "small" },
    el("input", { type: "checkbox", name: "strata", value: s, id: `review-stratum-${s}` }), " ",
    el("span", { "data-i18n": `stratum.${s}` })));
  panel.append(
    el("form", { id: "review-form", class: "form-row" },
      el("label", { for: "review-seed", "data-i18n": "review.seed" }),
      el("input", { id: "review-seed", type: "number", min: "0", value: "1", required: true, size: "8" }),
      el("span", { class: "small", "data-i18n": "review.strata" }), ...strata,
      el("label", { for: "review-n", "data-i18n": "review.n" }),
      el("input", { id: "review-n", type: "number", min: "1", max: "500", value: "20", size: "5" }),
      el("button", { id: "review-draw", type: "submit", "data-i18n": "review.draw" })),
    el("div", { class: "form-row" },
      el("label", { for: "review-open-id", "data-i18n": "review.sample_id" }),
      el("input", { id: "review-open-id", type: "text", size: "38", spellcheck: "false" }),
      el("button", { id: "review-open", type: "button", "data-i18n": "review.open" }),
      el("button", { id: "review-report-button", type: "button", "data-i18n": "review.report" })),
    el("p", { class: "hint", "data-i18n": "review.hint" }),
    el("div", { id: "review-queue", "aria-live": "polite" }),
    el("div", { id: "review-report", "aria-live": "polite" }));
  translateTree(panel);
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
  review.report = null;
  $("review-report").replaceChildren();
  await show();
}

async function show() {
  const q = $("review-queue");
  const s = review.sample;
  q.replaceChildren();
  if (!s.items.length) {
    q.append(el("p", { id: "review-empty", text: t("review.empty") }));
    return;
  }
  const item = s.items[review.index];
  const judged = s.items.filter((i) => i.verdict).length;
  const current = item.verdict;
  const c = item.citation;
  q.append(
    el("p", { class: "small" }, el("span", { id: "review-position", "data-item": item.item, "data-of": s.items.length,
      text: t("review.position", { item: item.item, of: s.items.length }) }),
      " · " + t("review.judged", { n: judged }) + " · " + t("review.stratum") + " ", el("code", { text: item.stratum }),
      " · " + t("answer.run") + " ", el("code", { text: item.run_id })),
    el("h3", { text: t("review.sentence") }),
    el("blockquote", { id: "review-sentence", class: "review-sentence", text: item.sentence }),
    el("p", { class: "small" }, t("review.cited"), " ", el("strong", { text: c.document }), " › ",
      (c.heading_path || []).join(" › ") || t("version.no_heading"), ` [${c.start}, ${c.end})`),
    el("p", { id: "review-current", class: "small", "data-verdict": current ? current.verdict : "",
      text: current ? t("review.current", { verdict: code("verdict", current.verdict) }) + (current.note ? " — " + current.note : "")
        : t("review.not_judged") }),
    el("label", { for: "review-note", class: "small", text: t("review.note") }),
    el("textarea", { id: "review-note", rows: "2", cols: "60", maxlength: "2000" }),
    el("div", { class: "form-row" },
      ...LEVELS.map((level, i) => el("button", { type: "button", id: `review-${level}`,
        class: `verdict-button ${level}`, "aria-pressed": current?.verdict === level ? "true" : "false",
        onclick: () => record(level) }, `${code("verdict", level)} (${i + 1})`)),
      el("button", { type: "button", id: "review-prev", onclick: () => move(-1), text: t("review.prev") }),
      el("button", { type: "button", id: "review-next", onclick: () => move(1), text: t("review.next") })));
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
    showMessage(() => t("review.recorded", { verdict: code("verdict", v.verdict), item: v.item, seq: String(v.seq) }), "info");
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
  // The statement is the server's sentence; the interval label is ours.
  const ci = r.ci95 ? " " + t("review.ci", { lo: num(r.ci95[0], 2), hi: num(r.ci95[1], 2) }) : "";
  return `${r.statement}${ci}`;
}

async function report() {
  const id = review.sample?.sample_id || $("review-open-id").value.trim();
  review.report = await api(`/v1/review/samples/${encodeURIComponent(id)}/report`);
  renderReport(review.report);
}

function renderReport(r) {
  const rows = [r.overall, ...r.strata].map((s) => el("tr", { "data-stratum": s.stratum },
    el("td", { text: s.stratum === "overall" ? t("review.overall") : s.stratum }), el("td", { class: "pairs", text: rate(s.pairs) }),
    el("td", { class: "sentences", text: rate(s.sentences) }),
    ...LEVELS.map((l) => el("td", { class: `num ${l}`, text: String(s.verdicts[l]) })),
    el("td", { class: "num unreviewed", text: String(s.pairs_unreviewed) })));
  const failures = r.failures.map((f) => el("li", {},
    el("strong", { text: code("verdict", f.verdict) }), " " + t("review.failure.item", { item: f.item, sentence: f.sentence_text }) + " ",
    el("code", { text: f.run_id }), " · " + t("review.failure.ranks", { evidence: f.evidence_id, evidence_rank: f.evidence_rank, passage_rank: f.passage_rank })
    + ` · ${f.document} ${f.version_id.slice(0, 15)}… · ${f.generator}${f.note ? " · " + f.note : ""}`));
  $("review-report").replaceChildren(
    el("h2", { text: t("review.report.title") }),
    el("table", { id: "review-report-table" },
      el("thead", {}, el("tr", {}, ...[t("review.stratum"), t("review.col.pairs"), t("review.col.sentences"),
        ...LEVELS.map((l) => code("verdict", l)), t("review.col.unreviewed")].map((h) => el("th", { text: h })))),
      el("tbody", {}, ...rows)),
    el("h3", { text: t("review.failures") }),
    failures.length ? el("ul", { id: "review-failures" }, ...failures) : el("p", { class: "small", text: t("review.failures.none") }),
    el("p", { class: "hint", text: `${r.rules.pairs}. ${r.rules.sentences}. ${r.rules.ci95}.` }));
}

// A language switch: the queue (and its Fundstelle) and the report again, in the new words.
document.addEventListener("stichtag:lang", () => {
  if (review.sample) guarded(null, show);
  if (review.report) renderReport(review.report);
});

build();
