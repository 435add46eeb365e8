"""The auditor console in a real headless Chromium (selenium + Debian's chromedriver).

Needs ``apt-get install -y chromium chromium-driver`` and the ``selenium`` package; the
test is skipped when either is missing. Screenshots go to ``test-artifacts/console/``.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from stichtag.cli.demo import DEMO_DIR
from stichtag.cli.manifest import ingest_manifest
from tests.conftest import REPO, LiveServer

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
ARTIFACTS = REPO / "test-artifacts" / "console"
QUESTION = "Welcher Höchstrechnungszins gilt für Neugeschäft?"
STICHTAG = "2022-06-01"

if os.environ.get("CI") and not (shutil.which("chromium") and shutil.which("chromedriver")):
    # In CI the browser test must run: `make test` installs chromium; never skip silently.
    raise RuntimeError("CI: chromium and chromium-driver are required for tests/e2e")
webdriver = pytest.importorskip("selenium.webdriver")
if not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()):
    pytest.skip("chromium and chromium-driver are not installed", allow_module_level=True)

from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.support import expected_conditions as ec  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402


@pytest.fixture
def browser() -> Iterator[Any]:
    profile = tempfile.mkdtemp(prefix="stichtag-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
                 f"--user-data-dir={profile}", "--window-size=1366,850", "--lang=en-US"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def shot(driver: Any, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    driver.save_screenshot(str(ARTIFACTS / f"{name}.png"))


def text_of(driver: Any, css: str) -> str:
    # One script call: the page may replace the element between a find and a read.
    value = driver.execute_script(
        "const e = document.querySelector(arguments[0]); return e ? e.textContent : null;", css)
    return "" if value is None else str(value)


def set_date(driver: Any, element_id: str, value: str) -> None:
    # Typing into <input type=date> depends on the browser locale; set the value directly.
    driver.execute_script("document.getElementById(arguments[0]).value = arguments[1];",
                          element_id, value)


def test_console_end_to_end(live: LiveServer, tenant: Any, browser: Any) -> None:
    ingest_manifest(live.services, tenant, DEMO_DIR / "manifest.csv", use_tx_time=True)
    live.services.indexer.catch_up(tenant.tenant_id)
    key = live.key(tenant)
    wait = WebDriverWait(browser, 60)

    with live.client() as anon:
        page = anon.get("/")
        assert page.status_code == 200 and "Auditor console" in page.text
        assert anon.get("/console/static/console.js").status_code == 200
        assert "/" not in anon.get("/schema/openapi.json").json()["paths"]

    # Sign in: the key goes to sessionStorage only; Enter submits.
    browser.get(live.base_url + "/")
    wait.until(lambda d: d.execute_script("return document.body.dataset.ready") == "yes")
    assert browser.find_element(By.ID, "valid-at").get_attribute("value")  # defaults to today
    shot(browser, "01-sign-in")
    browser.find_element(By.ID, "api-key").send_keys(key, Keys.ENTER)
    wait.until(ec.visibility_of_element_located((By.ID, "signout-button")))
    # Signed in, the key field is gone from view (it once stayed: .signin's flex beat [hidden]).
    assert not browser.find_element(By.ID, "api-key").is_displayed()
    assert browser.execute_script("return sessionStorage.getItem('stichtag.apiKey')") == key
    assert browser.execute_script("return localStorage.length") == 0

    # Ask as of the Stichtag (valid and known), submitted with Enter.
    set_date(browser, "valid-at", STICHTAG)
    set_date(browser, "known-at", STICHTAG)
    question = browser.find_element(By.ID, "question")
    question.send_keys(QUESTION, Keys.ENTER)
    wait.until(ec.presence_of_element_located((By.ID, "answer-status")))
    assert text_of(browser, "#answer-status") in ("answered", "partial")
    run_id = text_of(browser, "#answer-run-id")

    with live.client(key) as http:
        api = http.post("/v1/answer", json={"question": QUESTION, "valid_at": STICHTAG,
                                            "known_at": STICHTAG}).json()
        history = http.get("/v1/documents/surplus-declaration/history").json()
        as_of = http.get("/v1/documents/surplus-declaration",
                         params={"valid_at": STICHTAG, "known_at": STICHTAG}).json()
    citations = [c for s in api["sentences"] for c in s["citations"]]
    sentences = browser.find_elements(By.CSS_SELECTOR, "#sentences > li")
    assert len(sentences) == len(api["sentences"])
    chips = browser.find_elements(By.CSS_SELECTOR, "#sentences .chip")
    assert len(chips) == len(citations) > 0
    consulted = {s["citation"]["document"] for s in api["sources"] if s.get("consulted", True)}
    shown = [e.get_attribute("data-document")
             for e in browser.find_elements(By.CSS_SELECTOR, "#sources-line .source")]
    # The source line names what was read, not what was found (issue #21).
    assert shown == api["source_line"] == ["surplus-declaration"]
    assert set(shown) == consulted
    assert "underwriting-guideline" in {s["citation"]["document"] for s in api["sources"]}
    assert "underwriting-guideline" not in text_of(browser, "#sources-line")

    # Click a chip: the highlight is exactly the cited quote, with the heading path.
    chosen = next(i for i, c in enumerate(citations) if "0,25 %" in c["quote"])
    chips[chosen].click()
    wait.until(ec.visibility_of_element_located((By.ID, "quote-mark")))
    cite = citations[chosen]
    assert text_of(browser, "#quote-mark") == cite["quote"]
    assert text_of(browser, "#version-id") == cite["version_id"]
    assert text_of(browser, "#heading-path") == " \u203a ".join(cite["heading_path"])
    assert text_of(browser, "#quote-check") == "highlight equals the cited quote"
    shot(browser, "02-answer-with-source")
    browser.find_element(By.ID, "version-close").click()

    # A list question: links from the catalogue, no sentence citations, no source chip.
    question.clear()
    question.send_keys("Welche Dokumente zum Thema Überschussbeteiligung gibt es?", Keys.ENTER)
    wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, "#listing button.listed")))
    assert text_of(browser, "#answer-status") == "answered"
    listed = browser.find_elements(By.CSS_SELECTOR, "#listing button.listed")
    assert [b.get_attribute("data-version") for b in listed] == [as_of["version_id"]]
    assert not browser.find_elements(By.CSS_SELECTOR, "#sources-line .source")
    assert not browser.find_elements(By.CSS_SELECTOR, "#sentences .chip")
    listed[0].click()
    wait.until(lambda d: text_of(d, "#version-id") == as_of["version_id"])
    shot(browser, "02b-list-answer")
    browser.find_element(By.ID, "version-close").click()

    # An abstention shows reason, the refusing gate with the unsupported terms, threshold
    # vs observed and the next step.
    question.clear()
    question.send_keys("Wer gewann die Fußball-WM 2014?", Keys.ENTER)
    wait.until(ec.presence_of_element_located((By.ID, "abstain-reason")))
    assert text_of(browser, "#abstain-reason") == "out_of_scope"
    gate = text_of(browser, "#abstain-gate")
    assert gate.startswith("scope: ") and "Fußball-WM" in gate
    assert "threshold 0." in text_of(browser, "#abstain-values")
    assert text_of(browser, "#abstain-next")
    shot(browser, "03-abstention")

    # History of surplus-declaration: one rectangle per assertion, versions openable.
    browser.find_element(By.ID, "tab-history").click()
    browser.find_element(By.ID, "history-key").send_keys("surplus-declaration", Keys.ENTER)
    wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, "#timeline rect.assertion")))
    rects = browser.find_elements(By.CSS_SELECTOR, "#timeline rect.assertion")
    assert len(rects) == len(history["assertions"])
    first_version = rects[0].get_attribute("data-version")
    rects[0].click()
    wait.until(lambda d: text_of(d, "#version-id") == first_version)
    set_date(browser, "knew-date", STICHTAG)
    browser.find_element(By.ID, "knew-button").click()
    wait.until(ec.presence_of_element_located((By.ID, "knew-result")))
    assert as_of["version_id"] in text_of(browser, "#knew-result")
    # Diff of the last two versions (2025 vs 2026 declaration), sentence by sentence.
    browser.find_element(By.ID, "diff-button").click()
    wait.until(ec.presence_of_element_located((By.ID, "diff-summary")))
    removed = [e.text for e in browser.find_elements(By.CSS_SELECTOR, "ul.diff li.removed")]
    added = [e.text for e in browser.find_elements(By.CSS_SELECTOR, "ul.diff li.added")]
    assert any("2,80 %" in t for t in removed) and any("2,75 %" in t for t in added)
    assert not any("2,80 %" in t for t in added)
    assert "unchanged" in text_of(browser, "#diff-summary")
    shot(browser, "04-history")

    # Runs: the last answer's (the abstention's) run id is prefilled; open the first one.
    browser.find_element(By.ID, "tab-runs").click()
    run_input = browser.find_element(By.ID, "run-id")
    assert run_input.get_attribute("value") and run_input.get_attribute("value") != run_id
    run_input.clear()
    run_input.send_keys(run_id, Keys.ENTER)
    wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, "#run-candidates tbody tr")))
    assert browser.find_elements(By.CSS_SELECTOR, "#run-gates tbody tr")
    browser.find_element(By.ID, "replay-button").click()
    wait.until(ec.presence_of_element_located((By.ID, "verdict-status")))
    assert text_of(browser, "#verdict-status") == "reproduced"

    browser.find_element(By.ID, "verify-button").click()
    wait.until(ec.presence_of_element_located((By.ID, "verify-status")))
    problems = [e.text for e in browser.find_elements(By.CSS_SELECTOR, "#verify-problems li")]
    assert text_of(browser, "#verify-status") == "PASS", problems
    with live.client(key) as http:
        size = http.get("/v1/log/checkpoint").json()["size"]
    assert text_of(browser, "#verify-size") == f"size {size}"
    assert text_of(browser, "#verify-signature") == "valid (Ed25519)"
    shot(browser, "05-runs-replay-verify")

    # Signing out forgets the key.
    browser.find_element(By.ID, "signout-button").click()
    assert browser.execute_script("return sessionStorage.getItem('stichtag.apiKey')") is None
