"""The console's message catalogue (app/stichtag/console/static/messages.js) and its use.

Every key has German and English text with the same placeholders; every key the pages use
exists; and no visible text is left in the HTML or the JavaScript outside the catalogue. The
scan is a heuristic (see ``_visible``): its rules are tested on examples first, so a rule
that stops matching fails here instead of passing everything.
"""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from stichtag.console import STATIC_DIR

CATALOGUE = STATIC_DIR / "messages.js"
SCRIPTS = sorted(p for p in STATIC_DIR.glob("*.js") if p.name != "messages.js")
PLACEHOLDER = re.compile(r"\{(\w+)\}")
# Names, not words: the product's name, and technical tokens the code compares or sends.
NOT_TEXT = {"stichtag", "stk_…", "Content-Type", "Authorization", "Bearer \0", "Ed25519",
            "ArrowRight", "ArrowLeft", "Enter", "Escape"}
VISIBLE_ATTRS = ("placeholder", "title", "aria-label", "alt")


def catalogue() -> dict[str, dict[str, str]]:
    text = CATALOGUE.read_text(encoding="utf-8")
    head = "export const MESSAGES = "
    start = text.index(head) + len(head)
    body = text[start:].strip()
    assert body.endswith(";"), "messages.js ends with the object literal and a semicolon"
    loaded = json.loads(body[:-1])
    assert isinstance(loaded, dict)
    return loaded


# ---------- a small JavaScript lexer: string literals with their line and what precedes ----------

REGEX_AFTER = set("(,=:[!&|?{};") | {""}


def js_strings(source: str) -> list[tuple[int, str, str]]:
    """(line, literal text, source before it on its line) for every string literal.

    Template literals yield their static parts joined by NUL (the ``${…}`` holes), and the
    literals inside the holes separately. Comments and regular expressions are skipped.
    """
    out: list[tuple[int, str, str]] = []
    i, n = 0, len(source)

    def line_of(pos: int) -> int:
        return source.count("\n", 0, pos) + 1

    def before(pos: int) -> str:
        return source[source.rfind("\n", 0, pos) + 1:pos]

    def last_significant(pos: int) -> str:
        j = pos - 1
        while j >= 0 and source[j] in " \t\r\n":
            j -= 1
        if j >= 0 and source[j].isalnum():  # `return /re/` reads as a regex too
            k = j
            while k >= 0 and (source[k].isalnum() or source[k] == "_"):
                k -= 1
            return "" if source[k + 1:j + 1] in ("return", "typeof") else "x"
        return source[j] if j >= 0 else ""

    def quoted(pos: int, quote: str) -> int:
        start, buf = pos, []
        pos += 1
        while source[pos] != quote:
            if source[pos] == "\\":
                buf.append(source[pos + 1])
                pos += 2
                continue
            buf.append(source[pos])
            pos += 1
        out.append((line_of(start), "".join(buf), before(start)))
        return pos + 1

    def template(pos: int) -> int:
        start, buf = pos, []
        pos += 1
        while source[pos] != "`":
            if source[pos] == "\\":
                buf.append(source[pos + 1])
                pos += 2
            elif source.startswith("${", pos):
                pos = code(pos + 2, closing="}")
                buf.append("\0")
            else:
                buf.append(source[pos])
                pos += 1
        out.append((line_of(start), "".join(buf), before(start)))
        return pos + 1

    def code(pos: int, closing: str | None = None) -> int:
        depth = 0
        while pos < n:
            c = source[pos]
            if closing and c == closing and depth == 0:
                return pos + 1
            if c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
            if source.startswith("//", pos):
                pos = source.find("\n", pos)
                pos = n if pos < 0 else pos
            elif source.startswith("/*", pos):
                pos = source.index("*/", pos) + 2
            elif c in "\"'":
                pos = quoted(pos, c)
            elif c == "`":
                pos = template(pos)
            elif c == "/" and last_significant(pos) in REGEX_AFTER:
                pos += 1
                in_class = False
                while in_class or source[pos] != "/":
                    if source[pos] == "\\":
                        pos += 1
                    elif source[pos] == "[":
                        in_class = True
                    elif source[pos] == "]":
                        in_class = False
                    pos += 1
                pos += 1
            else:
                pos += 1
        return pos

    code(i)
    return out


WORDS = re.compile(r"[A-Za-zÄÖÜäöüß]{2,}\s+[A-Za-zÄÖÜäöüß]{2,}")
CAPITALIZED = re.compile(r"^\W*[A-ZÄÖÜ][a-zäöüß]+")
# Where a literal is shown: a text-like property or attribute, or the first child of el()
# (the argument right after the attributes object).
TEXT_SINK = re.compile(r"""(?:(?:\btext|\btitle|\bplaceholder|\balt|"aria-label"|textContent)"""
                       r"""\s*[:=]|\}\s*,)\s*$""")
NOT_SINK = re.compile(r"""(?:\bclass\s*:|querySelector(?:All)?\(|\bid\s*:|\bfor\s*:"""
                      r"""|console\.\w+\()\s*$""")


def _visible(literal: str, preceding: str) -> bool:
    """Whether a literal reads as text a user sees (and so belongs in the catalogue)."""
    if literal in NOT_TEXT or NOT_SINK.search(preceding):
        return False
    if TEXT_SINK.search(preceding) and re.search(r"[A-Za-zÄÖÜäöüß]", literal):
        return True
    return bool(WORDS.search(literal) or CAPITALIZED.search(literal))


def untranslated_js(source: str) -> list[tuple[int, str]]:
    return [(line, lit) for line, lit, pre in js_strings(source) if _visible(lit, pre)]


class _Html(HTMLParser):
    """Text and visible attributes of the page that no data-i18n key covers."""

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[bool] = []  # per open element: does a data-i18n key replace its text?
        self.problems: list[str] = []
        self.keys: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        for name, value in a.items():
            if name.startswith("data-i18n") and value:
                self.keys.add(value)
        for name in VISIBLE_ATTRS:
            if a.get(name) and f"data-i18n-{name}" not in a and a[name] not in NOT_TEXT:
                self.problems.append(f"<{tag} {name}={a[name]!r}>")
        if tag not in ("meta", "link", "input", "br", "img"):
            self.stack.append("data-i18n" in a)

    def handle_endtag(self, tag: str) -> None:
        if tag not in ("meta", "link", "input", "br", "img") and self.stack:
            self.stack.pop()

    def handle_data(self, data: str) -> None:
        text = data.strip()
        if not text or (self.stack and self.stack[-1]) or text in NOT_TEXT:
            return
        if re.search(r"[A-Za-zÄÖÜäöüß]", text):
            self.problems.append(repr(text))


def scan_html(text: str) -> _Html:
    parser = _Html()
    parser.feed(text)
    return parser


def used_keys() -> tuple[set[str], set[str]]:
    """Keys the pages name literally, and prefixes of keys built at run time."""
    keys, prefixes = set(), set()
    keys |= scan_html((STATIC_DIR / "index.html").read_text(encoding="utf-8")).keys
    for path in SCRIPTS:
        source = path.read_text(encoding="utf-8")
        keys |= set(re.findall(r'(?<![\w.])t\("([^"]+)"', source))
        keys |= set(re.findall(r'"data-i18n(?:-[a-z-]+)?":\s*"([^"]+)"', source))
        prefixes |= set(re.findall(r'(?<![\w.])t\(`([^`$]+)\$\{', source))
        prefixes |= {f"{g}." for g in re.findall(r'(?<![\w.])code\("([a-z_]+)",', source)}
        prefixes |= set(re.findall(r'"data-i18n":\s*`([^`$]+)\$\{', source))
    return keys, prefixes


# ---------- the scanner's rules, on examples ----------

@pytest.mark.parametrize(("snippet", "flagged"), [
    ('el("p", { text: "Hello world" })', ["Hello world"]),
    ('el("button", {}, "Open")', ["Open"]),
    ('el("td", { text: "none" })', ["none"]),
    ('el("td", {}, "none")', ["none"]),
    ('el("td", { text: `size ${n}` })', ["size \0"]),
    ('node.textContent = "offen";', ["offen"]),
    ('x = `${a ? "Ja" : "Nein"} bitte`;', ["Ja", "Nein"]),
    ('el("p", { title: "cited quote" })', ["cited quote"]),
    ('el("p", { class: "small pair-counts", id: "Summary" })', []),
    ('el("p", { text: t("diff.summary", { n: 3 }) })', []),
    ('if (ev.key === "Enter") go(); // Open the thing', []),
    ('const re = /^"Quoted (\\S+)"$/; document.querySelectorAll("#form input[name=s]")', []),
    ('console.error("no message here")', []),
    ('headers["Content-Type"] = "application/json";', []),
    ('/* Not text */ api(`/v1/runs/${encodeURIComponent(id)}/replay`)', []),
])
def test_the_scanner_flags_visible_literals_only(snippet: str, flagged: list[str]) -> None:
    assert [lit for _, lit in untranslated_js(snippet)] == flagged


def test_the_html_scan_flags_text_and_attributes_without_a_key() -> None:
    page = scan_html('<p>Run log</p><h2 data-i18n="log.title">Run log</h2>'
                     '<input placeholder="e.g. x"><input placeholder="z" data-i18n-placeholder="k">'
                     '<h1>stichtag <span data-i18n="app.subtitle"></span></h1>')
    assert page.problems == ["'Run log'", "<input placeholder='e.g. x'>"]
    assert page.keys == {"log.title", "k", "app.subtitle"}


# ---------- the catalogue and the pages ----------

def test_every_message_has_german_and_english_with_the_same_placeholders() -> None:
    messages = catalogue()
    assert len(messages) > 100
    for key, entry in messages.items():
        assert re.fullmatch(r"[a-z][a-z0-9_-]*(\.[a-z0-9_-]+)+", key), key
        assert set(entry) == {"de", "en"}, key
        de, en = entry["de"], entry["en"]
        assert de.strip() and en.strip(), key
        assert sorted(PLACEHOLDER.findall(de)) == sorted(PLACEHOLDER.findall(en)), key


UMLAUT_SUBSTITUTE = re.compile(r"(?<![aeiouq])(ae|oe|ue)")
# German words where ae/oe/ue is no umlaut written out (checked by hand).
REAL_AE_OE_UE = {"aktuelles", "zuerst", "quelle", "quellen", "quellfassung"}


def umlaut_substitutes(text: str) -> set[str]:
    words = {w.lower() for w in re.findall(r"\w+", text)}
    return {w for w in words if UMLAUT_SUBSTITUTE.search(w) and w not in REAL_AE_OE_UE}


def test_umlaut_substitutes_are_found() -> None:
    assert umlaut_substitutes("API-Schluessel fuer Aenderungen, Quelle") == {
        "schluessel", "fuer", "aenderungen"}


def test_german_is_written_with_umlauts_not_their_substitutes() -> None:
    found = set().union(*(umlaut_substitutes(e["de"]) for e in catalogue().values()))
    assert found == set()


def test_every_key_the_pages_use_is_in_the_catalogue() -> None:
    messages = catalogue()
    keys, prefixes = used_keys()
    assert len(keys) > 100 and {"status.", "gate.", "verdict."} <= prefixes
    assert sorted(keys - set(messages)) == []
    for prefix in prefixes:
        assert any(k.startswith(prefix) for k in messages), prefix


def test_the_page_has_no_text_outside_the_catalogue() -> None:
    page = scan_html((STATIC_DIR / "index.html").read_text(encoding="utf-8"))
    assert page.problems == []


def shadowed_imports(source: str) -> set[str]:
    """Names imported from i18n.js that the module binds again (a local ``t`` once turned
    the timeline's labels into NaN: Date.parse of a message key)."""
    imported: set[str] = set()
    for names in re.findall(r'import \{([^}]*)\} from "\./i18n\.js"', source):
        imported |= {n.strip() for n in names.split(",") if n.strip()}
    rebound = set(re.findall(r"\b(?:const|let|var)\s+(\w+)", source))
    rebound |= set(re.findall(r"\((\w+)\)\s*=>", source))
    rebound |= {p.strip() for params in re.findall(r"\(([\w\s,]+)\)\s*=>", source)
                for p in params.split(",")}
    return imported & rebound


def test_the_shadowing_check_finds_a_local_t() -> None:
    assert shadowed_imports('import { t, num } from "./i18n.js";\nconst t = (s) => 1;'
                            "\nxs.map((num, i) => num);") == {"t", "num"}


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: p.name)
def test_the_scripts_do_not_shadow_the_message_functions(path: Path) -> None:
    assert shadowed_imports(path.read_text(encoding="utf-8")) == set()


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: p.name)
def test_the_scripts_have_no_text_outside_the_catalogue(path: Path) -> None:
    source = path.read_text(encoding="utf-8")
    assert js_strings(source), "the lexer found no literal at all"
    assert untranslated_js(source) == []
