"""The console's compare view and receipt buttons in a real headless Chromium: one question
at two Stichtage side by side with the cause of the change. Skipped like
tests/e2e/test_console.py without a browser."""

from __future__ import annotations  # noqa: I001  (import order: see below)

from datetime import UTC, datetime
from typing import Any

# test_console first: it skips the module when selenium or the browser is missing.
from stichtag.services.documents import IngestRequest
from tests.conftest import LiveServer
from tests.e2e.test_console import (  # noqa: F401  (browser, lang: fixtures)
    browser, lang, shot, text_of)

from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait

ZINS = "# § 2 Höchstzinssatz\n\n"
CAUSE = {"de": "Recht geändert (Geltungszeit)", "en": "the law changed (valid time)"}
RECEIPT = {"de": "Beleg (druckbar)", "en": "Receipt (printable)"}


def test_compare_view_shows_both_answers_and_the_cause(
        live: LiveServer, tenant: Any, browser: Any, lang: str) -> None:  # noqa: F811
    svc = live.services
    for valid_from, rate in ((2020, "0,9 %"), (2022, "0,25 %")):
        svc.documents.ingest(tenant, "zins", IngestRequest(
            text=f"{ZINS}(1) Der Höchstzinssatz Omegamarke beträgt {rate}. Die Tafel gilt.\n",
            valid_from=datetime(valid_from, 1, 1, tzinfo=UTC)))
    svc.indexer.catch_up(tenant.tenant_id)
    wait = WebDriverWait(browser, 90)
    browser.get(live.base_url + "/")
    wait.until(lambda d: d.execute_script("return document.body.dataset.ready") == "yes")
    browser.find_element(By.ID, "api-key").send_keys(live.key(tenant), Keys.ENTER)
    wait.until(ec.visibility_of_element_located((By.ID, "signout-button")))
    browser.find_element(By.ID, "question").send_keys("Welcher Höchstzinssatz Omegamarke gilt?")
    browser.execute_script(
        "for (const [id, v] of Object.entries(arguments[0])) "
        "document.getElementById(id).value = v;",
        {"compare-from-valid": "2021-01-01", "compare-to-valid": "2023-01-01"})
    browser.find_element(By.ID, "compare-button").click()
    wait.until(ec.presence_of_element_located((By.ID, "compare-summary")))
    sides = {e.get_attribute("data-side"): e.text
             for e in browser.find_elements(By.CSS_SELECTOR, "#compare .compare-side")}
    assert set(sides) == {"from", "to"}
    [change] = browser.find_elements(By.CSS_SELECTOR, "#compare-changes li.compare-change")
    assert (change.get_attribute("data-document"), change.get_attribute("data-kind"),
            change.get_attribute("data-cause")) == ("zins", "changed", "valid_time")
    assert CAUSE[lang] in change.text and "2022-01-01" in change.text
    # every answer shown carries its receipt buttons
    assert len(browser.find_elements(By.CSS_SELECTOR, "#compare .receipt-html")) == 2
    assert RECEIPT[lang] in text_of(browser, "#compare .compare-side .receipt-html")
    shot(browser, f"compare-{lang}")
