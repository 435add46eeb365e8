"""The console's Changes view in a real headless Chromium: the whole tenant and one document
(reached from the history page). Skipped like tests/e2e/test_console.py without a browser."""

from __future__ import annotations  # noqa: I001  (import order: see below)

from typing import Any

# test_console first: it skips the module when selenium or the browser is missing.
from stichtag.cli.demo import DEMO_DIR
from stichtag.cli.manifest import ingest_manifest
from tests.conftest import LiveServer
from tests.e2e.test_console import (  # noqa: F401  (browser, lang: fixtures)
    WORDS, attr_of, browser, lang, locale_date, shot, text_of)

from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait


def _sections(driver: Any) -> dict[str, str]:
    return {e.get_attribute("data-document"): e.text
            for e in driver.find_elements(By.CSS_SELECTOR, "#changes section.changes-doc")}


def test_changes_view_for_the_tenant_and_for_one_document(
        live: LiveServer, tenant: Any, browser: Any, lang: str) -> None:  # noqa: F811
    words = WORDS[lang]
    # The Changes view reads PostgreSQL only: spare the shared CPU the background embedding.
    live.services.worker.stop()
    ingest_manifest(live.services, tenant, DEMO_DIR / "manifest.csv", use_tx_time=True)
    key = live.key(tenant)
    wait = WebDriverWait(browser, 60)
    browser.get(live.base_url + "/")
    wait.until(lambda d: d.execute_script("return document.body.dataset.ready") == "yes")
    browser.find_element(By.ID, "api-key").send_keys(key, Keys.ENTER)
    wait.until(ec.visibility_of_element_located((By.ID, "signout-button")))

    # The whole tenant, known after 1 June 2025 up to 1 December 2025: the claims handbook
    # was retracted (30 June) and the 2026 surplus declaration recorded (15 November).
    browser.find_element(By.ID, "tab-changes").click()
    browser.find_element(By.ID, "changes-from").send_keys("2025-06-01")
    browser.find_element(By.ID, "changes-to").send_keys("2025-12-01", Keys.ENTER)
    wait.until(ec.presence_of_element_located((By.ID, "changes-summary")))
    sections = _sections(browser)
    assert set(sections) == {"claims-handbook-en", "surplus-declaration"}
    claims = '[data-document="claims-handbook-en"]'
    assert browser.find_elements(By.CSS_SELECTOR, f"{claims} tr.change-ended[data-ended=retracted]")
    assert words["retracted"] in sections["claims-handbook-en"]
    assert browser.find_elements(By.CSS_SELECTOR, f"{claims} .pair[data-to-state=not_in_force]")
    assert words["not_in_force"] in sections["claims-handbook-en"]
    surplus = browser.find_element(By.CSS_SELECTOR, '[data-document="surplus-declaration"]')
    old = " ".join(e.text for e in surplus.find_elements(
        By.CSS_SELECTOR, "ul.diff li.removed, ul.diff li.changed .old"))
    new = " ".join(e.text for e in surplus.find_elements(
        By.CSS_SELECTOR, "ul.diff li.added, ul.diff li.changed .new"))
    assert "2,80 %" in old and "2,75 %" in new and "2,80 %" not in new
    counts = {k: attr_of(browser, "#changes-summary", f"data-{k}")
              for k in ("documents", "appeared", "ended", "corrected")}
    assert counts == {"documents": "2", "appeared": "3", "ended": "2", "corrected": "0"}
    assert words["tenant-counts"] in text_of(browser, "#changes-summary")
    assert "null" not in browser.find_element(By.ID, "changes").text
    shot(browser, f"06-changes-tenant-{lang}")

    # One document from its history page: every change since before its first record,
    # including the backdated 2023 edition (valid from 1 July, recorded 15 August).
    browser.find_element(By.ID, "tab-history").click()
    browser.find_element(By.ID, "history-key").send_keys("underwriting-guideline", Keys.ENTER)
    wait.until(ec.element_to_be_clickable((By.ID, "history-changes"))).click()
    wait.until(lambda d: set(_sections(d)) == {"underwriting-guideline"})
    with live.client(key) as http:
        history = http.get("/v1/documents/underwriting-guideline/history").json()["assertions"]
    shown = {int(e.get_attribute("data-assertion")) for e in browser.find_elements(
        By.CSS_SELECTOR, "#changes tr.change-appeared")}
    assert shown == {a["assertion_id"] for a in history}
    assert locale_date("2023-08-15", lang) in _sections(browser)["underwriting-guideline"]
    assert browser.find_element(By.ID, "changes-document").get_attribute("value") == (
        "underwriting-guideline")
    assert attr_of(browser, "#changes-summary", "data-documents") == "1"
    assert words["one-document"] in text_of(browser, "#changes-summary")
    assert "null" not in browser.find_element(By.ID, "changes").text
    shot(browser, f"07-changes-document-{lang}")
