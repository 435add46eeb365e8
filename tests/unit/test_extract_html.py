"""HTML extraction: the VVG as an article page, charsets, hiding rules, refusals."""

from __future__ import annotations

import pytest

from stichtag.extract import ExtractionRefused, extract
from stichtag.extract import html as html_module
from stichtag.extract.html import extract_html
from tests.conftest import shared_path
from tests.extract_docs import (
    LAW,
    NOISE,
    TABLE,
    law_blocks,
    law_html,
    sentences,
    shared_share,
    source_markdown,
)


def test_law_page_keeps_the_article_and_nothing_else() -> None:
    blocks = law_blocks(shared_path(*LAW), 30_000)
    source = [s for *_, s in sentences(source_markdown(blocks), "text/markdown")]
    result = extract(law_html(blocks), "text/html; charset=utf-8")
    got = sentences(result.text, result.media_type)
    share = shared_share(source, [s for *_, s in got])
    print(f"VVG as HTML: {share:.2%} of {len(source)} source sentences")
    assert share >= 0.99
    for noise in NOISE:
        assert noise not in result.text
    assert "Impressum" not in result.text
    assert result.media_type == "text/markdown"
    assert "## § 1 - Vertragstypische Pflichten\n" in result.text
    assert "| " + " | ".join(TABLE[1]) + " |" in result.text
    for start, end, _ in got:
        regions = result.layout.locate(start, end)
        assert regions and all(r.path and r.path.startswith("html/body/main/article/")
                               for r in regions)
    assert result.provenance["root"] == "html/body/main/article"


@pytest.mark.parametrize("charset", ["windows-1252", "iso-8859-15", "utf-8"])
def test_meta_charset_decodes(charset: str) -> None:
    page = (f'<html><head><meta charset="{charset}"></head>'
            "<body><p>Prämie für Schäden über 5 €</p></body></html>")
    result = extract_html(page.encode(charset))
    assert result.text == "Prämie für Schäden über 5 €\n"
    assert result.provenance["charset_source"] == "meta"


def test_bom_declared_type_and_fallback_decode() -> None:
    page = "<!doctype html><p>Gefahrerhöhung</p>"
    assert extract(page.encode("utf-16"), None).provenance["charset_source"] == "bom"
    assert extract(page.encode("utf-16"), None).text == "Gefahrerhöhung\n"
    declared = extract(page.encode("cp1252"), "text/html; charset=windows-1252")
    assert declared.text == "Gefahrerhöhung\n"
    assert declared.provenance["charset_source"] == "declared"
    fallback = extract_html(page.encode("cp1252"))
    assert fallback.text == "Gefahrerhöhung\n"
    assert fallback.provenance["charset_source"] == "fallback"


def test_hidden_and_non_content_elements_are_dropped() -> None:
    page = b"""<html><body>
      <nav>Menue</nav><script>var x = "Skript";</script><style>.a{}</style>
      <noscript>Kein JS</noscript><template><p>Vorlage</p></template>
      <form><label>Suche</label></form>
      <h1>Titel</h1>
      <p>Sichtbar <span style="visibility: hidden">unsichtbar</span>bleibt.</p>
      <p hidden>Versteckt</p><div aria-hidden="true">Aria</div>
      <div style="color: red; DISPLAY:none">Keine Anzeige</div>
      <ul><li>Eins</li><li>Zwei</li></ul><ol><li>Erstens</li></ol>
      <p>Zeile<br>Umbruch</p>
    </body></html>"""
    result = extract_html(page)
    assert result.text == ("# Titel\n\nSichtbar bleibt.\n\n- Eins\n\n- Zwei\n\n1. Erstens\n\n"
                           "Zeile\nUmbruch\n")


def test_empty_page_is_refused() -> None:
    for page in (b"<html><body><nav>Nur Navigation</nav></body></html>", b"<html></html>",
                 b"   "):
        with pytest.raises(ExtractionRefused, match="no text"):
            extract_html(page)


def test_oversize_page_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(html_module, "MAX_HTML_BYTES", 1000)
    with pytest.raises(ExtractionRefused) as refused:
        extract_html(b"<html><body><p>" + b"x" * 1000 + b"</p></body></html>")
    assert refused.value.limit and "limit of 1000" in refused.value.reason


def test_deep_nesting_does_not_crash() -> None:
    for tag in (b"div", b"span", b"h2"):
        page = (b"<html><body>" + b"<%s>" % tag * 1500 + b"tief" + b"</%s>" % tag * 1500
                + b"</body></html>")
        assert "tief" in extract_html(page).text
