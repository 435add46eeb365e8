"""The console's leverage view in a real headless Chromium: the same report as
``stichtag calibrate --leverage`` (GET /v1/thresholds/leverage) for the signed-in key's
tenant, admin keys only; too few runs are said, enough runs give the delivery table
(docs/console.md, "The leverage of τ"). The runs are real check runs over HTTP."""

from __future__ import annotations

from typing import Any

from stichtag.services.access import Principal
from tests.conftest import LiveServer
from tests.e2e import test_console as base

browser, lang = base.browser, base.lang  # the fixtures, without the other module's tests
By, ec = base.By, base.ec

RULES = [f"({i}) Die Frist für Anträge der Gruppe {i} beträgt {10 + i} Tage." for i in range(1, 11)]
TEXT = "# Fristen\n\n" + "".join(f"{rule}\n\n" for rule in RULES)


def _check(http: Any, cited: int, uncited: int) -> None:
    """An answer written elsewhere: ``cited`` sentences quoting the rules, then
    ``uncited`` of its own."""
    sentences = [f"Satz {i + 1} gibt die Regel wieder." for i in range(cited)]
    sentences += [f"Satz {cited + i + 1} ist eine eigene Meinung." for i in range(uncited)]
    r = http.post("/v1/answer/check", json={
        "answer": " ".join(sentences), "valid_at": "2024-01-01",
        "citations": [{"sentence": i, "document": "fristen", "quote": RULES[i]}
                      for i in range(cited)]})
    assert r.status_code == 200 and r.json()["coverage"] == cited / (cited + uncited), r.text


def _open_tab(driver: Any, wait: Any) -> None:
    driver.find_element(By.ID, "tab-leverage").click()
    wait.until(lambda d: not d.find_element(By.ID, "panel-leverage").get_attribute("hidden"))


def test_leverage_view_shows_the_report_of_the_keys_tenant(
        live: LiveServer, tenant: Principal, browser: Any, lang: str) -> None:
    admin = live.key(tenant)
    with live.client(admin) as http:
        r = http.post("/v1/documents/fristen/versions", json={"text": TEXT,
                                                              "valid_from": "2020-01-01"})
        assert r.status_code == 201, r.text
        # a key without the admin scope is refused, and the console says so
        reader = live.key(tenant, scopes="read,audit")
        wait = base.open_console(browser, live, reader)
        _open_tab(browser, wait)
        wait.until(lambda d: "403" in base.text_of(d, "#message"))
        assert not browser.find_elements(By.ID, "leverage-runs")
        browser.find_element(By.ID, "signout-button").click()
        wait.until(ec.visibility_of_element_located((By.ID, "api-key")))
        browser.find_element(By.ID, "api-key").send_keys(admin, base.Keys.ENTER)
        wait.until(ec.visibility_of_element_located((By.ID, "signout-button")))

        # too few runs: said, nothing computed
        browser.find_element(By.ID, "leverage-button").click()
        wait.until(lambda d: base.attr_of(d, "#leverage-runs", "data-runs") == "0")
        assert base.attr_of(browser, "#leverage-note", "data-enough") == "no"
        assert not browser.find_elements(By.ID, "leverage-table")

        for i in range(32):  # 10, 9 or 8 of ten sentences cited
            _check(http, 10 - i % 3, i % 3)
        expected = http.get("/v1/thresholds/leverage").json()
    assert expected["enough"] and expected["runs"] == 32

    browser.find_element(By.ID, "leverage-button").click()
    wait.until(ec.presence_of_element_located((By.ID, "leverage-table")))
    assert base.text_of(browser, "#leverage-runs") == "32"
    assert base.text_of(browser, "#leverage-note") == expected["note"]

    def shown(value: float, digits: int) -> str:
        text = f"{value:.{digits}f}"
        return text.replace(".", ",") if lang == "de" else text

    rows = browser.find_elements(By.CSS_SELECTOR, "#leverage-table tbody tr")
    assert [r.get_attribute("data-tau") for r in rows] == [
        f"{d['tau']:.2f}" for d in expected["delivery"]]
    for row, d in zip(rows, expected["delivery"], strict=True):
        cells = [c.text for c in row.find_elements(By.TAG_NAME, "td")]
        assert cells == [shown(d["tau"], 2), shown(d["observed"], 3), shown(d["binomial"], 3),
                         shown(d["beta_binomial"], 3)]
    # the current τ (1.0, built in) is the highlighted row; a third of the runs cite all
    current = browser.find_elements(By.CSS_SELECTOR, "#leverage-table tr.current")
    assert [c.get_attribute("data-tau") for c in current] == ["1.00"]
    assert current[0].find_element(By.CSS_SELECTOR, "td.observed").text == shown(11 / 32, 3)
    assert base.text_of(browser, "#leverage-measured") == shown(expected["leverage_measured"], 2)
    base.shot(browser, f"leverage-{lang}")
