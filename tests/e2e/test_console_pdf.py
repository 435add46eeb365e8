"""A PDF citation in the auditor console, in a real headless Chromium (selenium).

The VVG typeset as a PDF is ingested as a raw upload; the console asks a question, the
citation chip opens the version panel on the cited page: the server renders the page
(pypdfium2, PNG) and the browser draws the quote's boxes over it. The test compares each
drawn highlight rectangle with the citation's box scaled to the image as rendered on the
screen, and checks with pdfium that the boxes hold the quote. Screenshots go to
``test-artifacts/console/``.
"""

from __future__ import annotations

from typing import Any

from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait

from tests.conftest import LiveServer
from tests.e2e.test_console import WORDS, attr_of, browser, lang, set_date, shot, text_of  # noqa: F401 - browser, lang: the fixtures
from tests.originals import quote_in_boxes, vvg_pdf

QUESTION = "Wozu verpflichtet sich der Versicherer mit dem Versicherungsvertrag?"
# The console's dates are days; known_at a day ahead sees what was ingested today.
VALID_AT, KNOWN_AT = "2024-06-01", "2099-01-01"
TOLERANCE_PX = 2.0


def test_pdf_citation_opens_on_its_page_with_the_quote_highlighted(
        live: LiveServer, tenant: Any, browser: Any, lang: str) -> None:  # noqa: F811 - the fixture
    pdf = vvg_pdf(12_000)
    key = live.key(tenant)
    with live.client(key) as http:
        r = http.post("/v1/documents/vvg/versions", content=pdf, params={
            "valid_from": "2020-01-01", "doc_class": "regulation"},
            headers={"Content-Type": "application/pdf"})
        assert r.status_code == 201, r.text
    live.services.indexer.catch_up(tenant.tenant_id)
    wait = WebDriverWait(browser, 60)

    browser.get(live.base_url + "/")
    wait.until(lambda d: d.execute_script("return document.body.dataset.ready") == "yes")
    browser.find_element(By.ID, "api-key").send_keys(key, Keys.ENTER)
    wait.until(ec.visibility_of_element_located((By.ID, "signout-button")))
    set_date(browser, "valid-at", VALID_AT)
    set_date(browser, "known-at", KNOWN_AT)
    browser.find_element(By.ID, "question").send_keys(QUESTION, Keys.ENTER)
    wait.until(ec.presence_of_element_located((By.ID, "answer-status")))
    assert attr_of(browser, "#answer-status", "data-status") in ("answered", "partial")

    with live.client(key) as http:
        api = http.post("/v1/answer", json={"question": QUESTION, "valid_at": VALID_AT,
                                            "known_at": KNOWN_AT}).json()
    citations = [c for s in api["sentences"] for c in s["citations"]]
    chips = browser.find_elements(By.CSS_SELECTOR, "#sentences .chip")
    assert len(chips) == len(citations) > 0
    chips[0].click()
    cite = citations[0]
    wait.until(lambda d: d.execute_script(
        "return document.getElementById('page-view').dataset.ready") == "yes")
    assert text_of(browser, "#page-label") == WORDS[lang]["page"].format(cite["page"])
    # The extracted text below still highlights exactly the quote.
    assert text_of(browser, "#quote-mark") == cite["quote"]
    assert text_of(browser, "#quote-check") == WORDS[lang]["quote-ok"]

    image = browser.execute_script("""
        const img = document.getElementById('page-image');
        img.scrollIntoView({block: 'start'});
        const r = img.getBoundingClientRect();
        return {x: r.left, y: r.top, w: r.width, h: r.height, nw: img.naturalWidth,
                nh: img.naturalHeight};""")
    assert image["nw"] > 0 and image["w"] > 100
    # The image keeps the page's proportions (unrotated A4 here).
    page_w, page_h = cite["boxes"][0]["page_width"], cite["boxes"][0]["page_height"]
    assert abs(image["nw"] / image["nh"] - page_w / page_h) < 0.01
    drawn = browser.execute_script("""
        return [...document.querySelectorAll('#page-frame .page-box')].map((e) => {
            const r = e.getBoundingClientRect();
            return {x: r.left, y: r.top, w: r.width, h: r.height};});""")
    on_page = [b for b in cite["boxes"] if b["page"] == cite["page"]]
    assert len(drawn) == len(on_page) > 0
    scale_x, scale_y = image["w"] / page_w, image["h"] / page_h
    for box, rect in zip(on_page, drawn, strict=True):
        want = {"x": image["x"] + box["x0"] * scale_x,
                "y": image["y"] + (page_h - box["y1"]) * scale_y,
                "w": (box["x1"] - box["x0"]) * scale_x, "h": (box["y1"] - box["y0"]) * scale_y}
        for k in ("x", "y", "w", "h"):
            assert abs(rect[k] - want[k]) <= TOLERANCE_PX, (k, rect, want)
    # ... and those boxes are where the quote is printed in the PDF.
    assert quote_in_boxes(pdf, cite)
    shot(browser, f"10-pdf-citation-on-its-page-{lang}")
