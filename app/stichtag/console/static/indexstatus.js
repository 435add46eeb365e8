// stichtag auditor console: a banner while the tenant's index is still filling
// (GET /v1/index/status): passages waiting for their vectors, changes not yet in the
// lexical index, and the time left at the measured rate. Gone once the index is complete.

import { api } from "./console.js";
import { num, t } from "./i18n.js";

const $ = (id) => document.getElementById(id);
// Often while filling, so the count visibly drains; rarely when complete, only to notice a
// bulk load started elsewhere (each look also samples the server's drain rate).
const FILLING_MS = 2000;
const COMPLETE_MS = 15000;
let last = null;
let timer = null;

// Seconds as the coarsest unit that still says something: 40 s, 3 min, 2 h.
function eta(seconds) {
  if (seconds === null || seconds === undefined) return t("index.eta.unknown");
  if (seconds < 90) return t("index.eta.seconds", { n: Math.max(1, Math.round(seconds)) });
  if (seconds < 90 * 60) return t("index.eta.minutes", { n: Math.round(seconds / 60) });
  return t("index.eta.hours", { n: num(seconds / 3600, 1) });
}

function render() {
  const banner = $("index-banner");
  if (!last || last.complete) {
    banner.hidden = true;
    banner.textContent = "";
    banner.dataset.pending = "0";
    return;
  }
  banner.dataset.pending = String(last.pending_embeddings);
  banner.dataset.lexicalPending = String(last.lexical_pending);
  banner.textContent = t("index.banner", { pending: last.pending_embeddings, eta: eta(last.eta_seconds) })
    + (last.lexical_pending ? " " + t("index.banner.lexical", { n: last.lexical_pending }) : "");
  banner.hidden = false;
}

async function look() {
  timer = null;
  if (document.body.dataset.signedIn !== "yes") { last = null; render(); return; }
  try {
    last = await api("/v1/index/status");
  } catch {
    last = null;  // a key without read scope, or the server away: no banner, look again later
  }
  render();
  schedule(last && !last.complete ? FILLING_MS : COMPLETE_MS);
}

function schedule(ms) {
  if (timer !== null) clearTimeout(timer);
  timer = setTimeout(look, ms);
}

// Signing in or out flips body[data-signed-in]: look at once, or clear the banner.
new MutationObserver(() => schedule(0)).observe(document.body, { attributes: true, attributeFilter: ["data-signed-in"] });
document.addEventListener("stichtag:lang", render);
// An answer that says the index is incomplete: look now rather than at the next tick.
document.addEventListener("stichtag:index", () => schedule(0));
schedule(0);
