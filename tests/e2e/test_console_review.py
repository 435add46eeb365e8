"""The review queue and report in a real headless Chromium: sign in, draw a sample, see the
answer sentence beside its highlighted Fundstelle, judge it with a keyboard shortcut, and
find the verdict in the report. Reuses the browser fixture and helpers of test_console."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

from stichtag.cli.demo import DEMO_DIR
from stichtag.cli.manifest import ingest_manifest
from tests.conftest import LiveServer
from tests.e2e import test_console as base

browser, lang = base.browser, base.lang  # the fixtures, without the other module's tests
By, Keys, ec, WebDriverWait = base.By, base.Keys, base.ec, base.WebDriverWait
text_of, shot = base.text_of, base.shot


def _surplus_only(tmp: Path) -> Path:
    with (DEMO_DIR / "manifest.csv").open(encoding="utf-8", newline="") as handle:
        rows = [r for r in csv.DictReader(handle) if r["document"] == "surplus-declaration"]
    out = tmp / "manifest.csv"
    with out.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows({**r, "file": str(DEMO_DIR / r["file"])} for r in rows)
    return out


def test_review_queue_and_report(live: LiveServer, tenant: Any, browser: Any, lang: str,
                                 tmp_path: Path) -> None:
    words = base.WORDS[lang]
    from selenium.webdriver.common.action_chains import ActionChains

    ingest_manifest(live.services, tenant, _surplus_only(tmp_path), use_tx_time=True)
    live.services.indexer.catch_up(tenant.tenant_id)
    key = live.key(tenant, scopes="read,audit", clearance=1)
    with live.client(key) as http:
        for valid_at in ("2022-06-01", "2025-05-01"):
            r = http.post("/v1/answer", json={"question": base.QUESTION, "valid_at": valid_at})
            assert r.json()["status"] in ("answered", "partial"), r.text
        expected = http.post("/v1/review/samples", json={"seed": 11, "strata": ["document"],
                                                         "n": 5}).json()
    assert expected["items"]
    wait = WebDriverWait(browser, 60)
    browser.get(live.base_url + "/")
    wait.until(lambda d: d.execute_script("return document.body.dataset.ready") == "yes")
    browser.find_element(By.ID, "api-key").send_keys(key, Keys.ENTER)
    wait.until(ec.visibility_of_element_located((By.ID, "signout-button")))

    # Draw the same sample in the console (same seed and strata: the same items).
    browser.find_element(By.ID, "tab-review").click()
    seed = browser.find_element(By.ID, "review-seed")
    seed.clear()
    seed.send_keys("11")
    browser.find_element(By.ID, "review-stratum-document").click()
    n = browser.find_element(By.ID, "review-n")
    n.clear()
    n.send_keys("5")
    browser.find_element(By.ID, "review-draw").click()
    wait.until(ec.visibility_of_element_located((By.ID, "quote-mark")))
    first = expected["items"][0]
    assert text_of(browser, "#review-sentence") == first["sentence"]
    assert text_of(browser, "#review-position") == words["item"].format(1, len(expected["items"]))
    # The Fundstelle beside it: the version text with exactly the cited quote highlighted.
    assert text_of(browser, "#quote-mark") == first["citation"]["quote"]
    assert text_of(browser, "#version-id") == first["citation"]["version_id"]
    assert text_of(browser, "#quote-check") == words["quote-ok"]
    shot(browser, f"06-review-queue-{lang}")

    # Judge item 1 "none" with the keyboard (3), with a note; the queue moves on.
    note = browser.find_element(By.ID, "review-note")
    note.send_keys("Zeitraum passt nicht")
    browser.find_element(By.ID, "review-sentence").click()  # focus off the note field
    ActionChains(browser).send_keys("3").perform()
    if len(expected["items"]) > 1:
        wait.until(lambda d: base.attr_of(d, "#review-position", "data-item") == "2")
    else:
        wait.until(lambda d: base.attr_of(d, "#review-current", "data-verdict") == "none")
    sample_id = browser.find_element(By.ID, "review-open-id").get_attribute("value")
    with live.client(key) as http:
        shown = http.get(f"/v1/review/samples/{sample_id}").json()
    verdict = shown["items"][0]["verdict"]
    assert verdict["verdict"] == "none" and verdict["note"] == "Zeitraum passt nicht"
    assert verdict["reviewer"] == key.split("_")[1]

    # The report lists the counts and the failed sentence with its run.
    browser.find_element(By.ID, "review-report-button").click()
    wait.until(ec.presence_of_element_located((By.ID, "review-report-table")))
    assert text_of(browser, "#review-report-table tr[data-stratum=overall] td.none") == "1"
    # The rate statement is the server's sentence, in its words in either language.
    assert text_of(browser, "#review-report-table tr[data-stratum=overall] td.pairs") \
        .startswith("0 of 1 citation pairs fully supported")
    assert first["run_id"] in text_of(browser, "#review-failures")
    shot(browser, f"07-review-report-{lang}")
