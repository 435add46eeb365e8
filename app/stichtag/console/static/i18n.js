// stichtag console: the language (German or English) and locale formats.
// Every user-visible string comes from messages.js (key → {de, en}); see README "Console".
//
// The choice: a language picked in the header (localStorage "stichtag.lang") wins; else
// the first of the browser's preferred languages (navigator.languages, which Chromium
// derives from Accept-Language / --lang) that is German or English; else English.

import { MESSAGES } from "./messages.js";

export const LANGS = ["de", "en"];
const LANG_STORE = "stichtag.lang";
// Formats when the browser names no region for the chosen language (e.g. a switch to
// English from a German browser): day first in both.
const DEFAULT_LOCALE = { de: "de-DE", en: "en-GB" };

const primary = (tag) => String(tag || "").toLowerCase().split("-")[0];

function browserLanguages() {
  const list = navigator.languages && navigator.languages.length ? navigator.languages : [navigator.language];
  return list.filter(Boolean);
}

export function preferredLang() {
  let stored = null;
  try { stored = localStorage.getItem(LANG_STORE); } catch { /* storage disabled */ }
  if (LANGS.includes(stored)) return stored;
  for (const tag of browserLanguages()) if (LANGS.includes(primary(tag))) return primary(tag);
  return "en";
}

let lang = preferredLang();
let locale = localeFor(lang);

// The browser's own tag for the chosen language when it names a region (en-US keeps US
// dates), else the default.
function localeFor(l) {
  return browserLanguages().find((tag) => primary(tag) === l && tag.includes("-")) || DEFAULT_LOCALE[l];
}

export const currentLang = () => lang;
export const currentLocale = () => locale;

// A number as text in the locale (1.234,5 in German); integers keep no decimals.
export function num(x, digits = null) {
  if (x === null || x === undefined || Number.isNaN(x)) return "—";
  if (typeof x !== "number") return String(x);
  const opts = digits === null ? { maximumFractionDigits: 20 }
    : { minimumFractionDigits: digits, maximumFractionDigits: digits };
  return new Intl.NumberFormat(locale, opts).format(x);
}

// A day (the YYYY-MM-DD prefix of an ISO date or timestamp, as the server wrote it) in the
// locale's format: 01.01.2024 in German. Formatted in UTC so the day never shifts.
export function date(iso) {
  const m = /^(\d{4})-(\d{2})-(\d{2})/.exec(String(iso || ""));
  if (!m) return String(iso || "");
  const d = new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3])));
  return new Intl.DateTimeFormat(locale, { year: "numeric", month: "2-digit", day: "2-digit", timeZone: "UTC" }).format(d);
}

// A timestamp in the server's own wall-clock time and offset (a tenant's midnight stays
// midnight): 01.06.2025, 00:00:00 +02:00 in German. A bare date is a date.
export function dateTime(iso) {
  const m = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2}))?(?:\.\d+)?(Z|[+-]\d{2}:?\d{2})?)?/.exec(String(iso || ""));
  if (!m) return String(iso || "");
  if (m[4] === undefined) return date(iso);
  const d = new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]), Number(m[4]), Number(m[5]), Number(m[6] || 0)));
  const text = new Intl.DateTimeFormat(locale, { year: "numeric", month: "2-digit", day: "2-digit",
    hour: "2-digit", minute: "2-digit", second: "2-digit", timeZone: "UTC" }).format(d);
  const zone = !m[7] ? "" : m[7] === "Z" || /^[+-]00:?00$/.test(m[7]) ? " UTC" : ` ${m[7]}`;
  return text + zone;
}

// The message for a key, with {name} placeholders filled (numbers in the locale's format).
export function t(key, params = {}) {
  const entry = MESSAGES[key];
  if (!entry) {
    console.error(`stichtag console: no message ${key}`);
    return key;
  }
  const text = entry[lang] ?? entry.en;
  return text.replace(/\{(\w+)\}/g, (whole, name) => {
    if (!(name in params)) return whole;
    const v = params[name];
    return typeof v === "number" ? num(v) : String(v ?? "");
  });
}

// A stable code from the server (status, gate, reason …) in words; an unknown code as is.
export function code(group, value) {
  if (value === null || value === undefined || value === "") return "—";
  const key = `${group}.${value}`;
  return key in MESSAGES ? t(key) : String(value);
}

// Static markup: data-i18n (text), data-i18n-placeholder, -title, -aria-label, -alt.
const ATTRS = ["placeholder", "title", "aria-label", "alt"];
export function translateTree(root = document) {
  for (const node of root.querySelectorAll("[data-i18n]")) node.textContent = t(node.dataset.i18n);
  for (const attr of ATTRS) {
    for (const node of root.querySelectorAll(`[data-i18n-${attr}]`)) node.setAttribute(attr, t(node.getAttribute(`data-i18n-${attr}`)));
  }
}

function applyLang() {
  document.documentElement.lang = lang;
  translateTree();
  const pick = document.getElementById("lang-select");
  if (pick) pick.value = lang;
}

// Switch and remember; views re-render on the "stichtag:lang" event.
export function setLang(next) {
  if (!LANGS.includes(next) || next === lang) return;
  lang = next;
  locale = localeFor(lang);
  try { localStorage.setItem(LANG_STORE, lang); } catch { /* storage disabled */ }
  applyLang();
  document.dispatchEvent(new CustomEvent("stichtag:lang", { detail: { lang } }));
}

applyLang();
