"""The console's index banner in a real headless Chromium: while the tenant's index is
filling the banner counts the passages still waiting for vectors, an answer given then
says so beside it, and the banner goes once the backlog has drained (docs/console.md,
"While the index fills"). The backlog is made real as in
tests/integration/test_index_flag.py: the test holds the tenant's embedding-owner lock,
so the server's worker cannot drain it until the test lets go."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from stichtag.services.access import Principal
from tests.conftest import LiveServer
from tests.e2e import test_console as base
from tests.integration.test_index_flag import QUESTION, TEXT

browser, lang = base.browser, base.lang  # the fixtures, without the other module's tests
By, ec = base.By, base.ec

FILLING = {"de": "Der Suchindex wird noch aufgebaut", "en": "The search index is still filling"}
FLAGGED = {"de": "während der Suchindex noch aufgebaut wurde",
           "en": "while the search index was still filling"}


def _banner(driver: Any) -> tuple[bool, str, str]:
    return (bool(driver.execute_script("return document.getElementById('index-banner').hidden")),
            base.attr_of(driver, "#index-banner", "data-pending"),
            base.text_of(driver, "#index-banner"))


def _ask(driver: Any, wait: Any) -> None:
    driver.execute_script("document.getElementById('answer').replaceChildren()")
    driver.find_element(By.ID, "ask-button").click()
    wait.until(ec.presence_of_element_located((By.ID, "answer-run-id")))


def test_banner_while_the_index_fills_and_the_flag_beside_the_answer(
        live: LiveServer, tenant: Principal, browser: Any, lang: str) -> None:
    svc = live.services
    key = live.key(tenant)
    with live.client(key) as http:
        wait = base.open_console(browser, live, key)
        hidden, _, _ = _banner(browser)
        assert hidden  # an empty tenant's index is complete: no banner
        with svc.store.feed.embedding_owner(tenant.tenant_id, wait=True):
            r = http.post("/v1/documents/zinsverordnung/versions",
                          json={"text": TEXT, "valid_from": "2020-01-01"})
            assert r.status_code == 201, r.text
            backlog = http.get("/v1/index/status").json()["pending_embeddings"]
            assert backlog >= 40
            # the banner shows up within a look or two, counting the server's backlog
            wait.until(lambda d: not _banner(d)[0])
            hidden, pending, text = _banner(browser)
            assert pending == str(backlog)
            assert FILLING[lang] in text and base.locale_int(backlog, lang) in text
            base.shot(browser, f"index-banner-{lang}")

            browser.find_element(By.ID, "question").send_keys(QUESTION)
            base.set_date(browser, "valid-at", "2024-01-01")
            # known tomorrow reads as now (docs/architecture.md §3.7); today's start would
            # predate the write
            tomorrow = (datetime.now(UTC) + timedelta(days=1)).date().isoformat()
            base.set_date(browser, "known-at", tomorrow)
            _ask(browser, wait)
            note = browser.find_element(By.ID, "answer-index")
            assert FLAGGED[lang] in note.text
            run_id = base.text_of(browser, "#answer-run-id")
            record = http.get(f"/v1/runs/{run_id}").json()["record"]
            assert record["index"]["complete"] is False
            assert note.get_attribute("data-pending") == str(record["index"]["pending"])
            base.shot(browser, f"index-answer-{lang}")

        # let go: the worker drains the backlog and the banner disappears by itself
        svc.indexer.notify(tenant.tenant_id)
        base.WebDriverWait(browser, 300).until(lambda d: _banner(d)[0])
        assert http.get("/v1/index/status").json()["complete"] is True
        _ask(browser, wait)
        assert not browser.find_elements(By.ID, "answer-index")
        assert base.attr_of(browser, "#answer-status", "data-status") in ("answered", "partial")
