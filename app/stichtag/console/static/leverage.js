// stichtag auditor console: the leverage of τ on the tenant's own recorded answers
// (GET /v1/thresholds/leverage, admin scope; docs/thresholds.md, "The leverage of τ"):
// the same figures and table as `stichtag calibrate --leverage`. The server computes
// everything; this module only renders it (textContent only).

import { api, el, guarded } from "./console.js";
import { num, t, translateTree } from "./i18n.js";

const $ = (id) => document.getElementById(id);
const QUANTILES = ["p10", "p25", "p50", "p75", "p90"];
let last = null;  // the report on screen, drawn again after a language switch

function build() {
  const panel = $("panel-leverage");
  panel.append(
    el("h2", { "data-i18n": "leverage.title" }),
    el("p", { class: "hint", "data-i18n": "leverage.hint" }),
    el("button", { id: "leverage-button", type: "button", "data-i18n": "leverage.load" }),
    el("div", { id: "leverage", "aria-live": "polite" }));
  translateTree(panel);
  $("leverage-button").addEventListener("click", () => guarded($("leverage-button"), load));
  // Opening the tab loads it once; the button reads it again.
  $("tab-leverage").addEventListener("click", () => { if (!last) guarded(null, load); });
}

async function load() {
  last = await api("/v1/thresholds/leverage");
  render(last);
}

const fmt = (x, digits) => num(x, digits);

function render(r) {
  const box = $("leverage");
  // The note is the server's sentence (English), as the CLI prints it.
  const note = el("p", { id: "leverage-note", class: "small", "data-enough": r.enough ? "yes" : "no", text: r.note });
  if (!r.enough) {
    box.replaceChildren(el("p", { id: "leverage-runs", "data-runs": r.runs, text: t("leverage.too_few", { runs: r.runs, tau: fmt(r.tau, 2) }) }), note);
    return;
  }
  const q = r.coverage_quantiles || {};
  const dl = (label, value, id) => [el("dt", { text: label }), el("dd", { id, text: value })];
  const window = r.window_above_2 ? t("leverage.window", { lo: fmt(r.window_above_2[0], 3), hi: fmt(r.window_above_2[1], 3), n: r.sentences })
    : t("leverage.window.none");
  box.replaceChildren(
    el("dl", { class: "meta", id: "leverage-summary" },
      ...dl(t("leverage.runs"), num(r.runs), "leverage-runs"),
      ...dl(t("leverage.tau"), fmt(r.tau, 2), "leverage-tau"),
      ...dl(t("leverage.sentences"), num(r.sentences), "leverage-sentences"),
      ...dl(t("leverage.presence"), fmt(r.presence, 3), "leverage-presence"),
      ...dl(t("leverage.rho"), fmt(r.rho, 3), "leverage-rho"),
      ...dl(t("leverage.measured"), fmt(r.leverage_measured, 2), "leverage-measured"),
      ...dl(t("leverage.binomial"), fmt(r.leverage_binomial, 2) + " · " + window, "leverage-binomial"),
      ...dl(t("leverage.quantiles"), QUANTILES.map((k) => `${k} ${fmt(q[k], 2)}`).join(" · "), "leverage-quantiles")),
    note,
    el("table", { id: "leverage-table" },
      el("thead", {}, el("tr", {}, [t("leverage.col.tau"), t("leverage.col.observed"), t("leverage.col.binomial"),
        t("leverage.col.beta_binomial")].map((h) => el("th", { text: h })))),
      el("tbody", {}, r.delivery.map((d) => el("tr", { "data-tau": d.tau.toFixed(2),
        class: Math.abs(d.tau - r.tau) < 1e-9 ? "current" : null },
      el("td", { class: "num", text: fmt(d.tau, 2) }),
      el("td", { class: "num observed", text: fmt(d.observed, 3) }),
      el("td", { class: "num binomial", text: fmt(d.binomial, 3) }),
      el("td", { class: "num beta-binomial", text: fmt(d.beta_binomial, 3) }))))),
    el("p", { class: "hint", text: t("leverage.table.hint") }));
}

document.addEventListener("stichtag:lang", () => { if (last) render(last); });

build();
