"""The page of `reagent serve` in headless Chromium: ask, watch the lanes fill in, read the answer; planted
markup in a passage stays text. Skipped, with the reason, without chromium/chromedriver (as test_trace_browser)."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

from scenario_runs import PLANTED
from serve_support import OLYMPICS, running, scripted_service
from test_trace_browser import browser  # noqa: F401 - the module's headless Chromium fixture

SCREENSHOT_COPY = Path(tempfile.gettempdir()) / "reagent-serve-page.png"


def _wait(driver, predicate, timeout: float = 30.0):
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout, poll_frequency=0.05).until(predicate)


def _ask(driver, question: str) -> None:
    from selenium.webdriver.common.by import By

    box = driver.find_element(By.ID, "question")
    box.clear()
    box.send_keys(question)
    driver.find_element(By.ID, "ask").click()


@pytest.mark.browser
def test_ask_watch_the_lanes_fill_in_then_read_the_answer(browser, tmp_path, capsys):  # noqa: F811
    from selenium.webdriver.common.by import By

    with running(scripted_service(tmp_path / "log.duckdb", seconds_per_call=0.25)) as srv:
        browser.get_log("browser")
        browser.get(srv.url + "/")
        assert browser.title == "reagent-local"
        _wait(browser, lambda d: "model scripted-olympics" in d.find_element(By.ID, "served").text)
        _ask(browser, OLYMPICS)

        # lanes appear while the run goes on, before the answer is shown
        _wait(browser, lambda d: len(d.find_elements(By.CSS_SELECTOR, ".lane")) >= 3)
        assert not browser.find_element(By.ID, "result").is_displayed()
        assert not browser.find_element(By.ID, "key-box").is_displayed()  # no key asked of this server
        assert "the agents are working" in browser.find_element(By.ID, "status").text
        live_chips = len(browser.find_elements(By.CSS_SELECTOR, ".ev"))
        _wait(browser, lambda d: d.find_element(By.ID, "result").is_displayed(), timeout=60)
        assert len(browser.find_elements(By.CSS_SELECTOR, ".ev")) > live_chips

        lanes = [e.text for e in browser.find_elements(By.CSS_SELECTOR, ".lane-label")]
        assert lanes[:4] == ["decomposer", "retriever", "verifier", "assembler"] and "supervisor" in lanes
        assert browser.find_elements(By.CSS_SELECTOR, '.ev[data-type="rollback_local"]')
        assert browser.find_elements(By.CSS_SELECTOR, '.ev[data-type="rollback_global"]')
        assert browser.find_element(By.ID, "answer").text == "508,000"
        assert "backtracks 1 local / 1 global" in browser.find_element(By.ID, "account").text
        assert not browser.find_element(By.ID, "road").is_displayed()  # one road: no verdict to show
        steps = browser.find_element(By.ID, "steps").text
        assert "In which state were the 1984 Summer Olympics held? → California" in steps
        passages = browser.find_element(By.ID, "passages").text
        assert "1984 Summer Olympics" in passages and PLANTED.replace('  ', ' ') in passages  # as text
        run_id = srv.service.worker.status()["running"] or browser.find_element(By.ID, "account").text.split()[-1]
        link = browser.find_element(By.ID, "trace-link").get_attribute("href")
        assert link == f"{srv.url}/runs/{run_id}"

        # a chip tells its event's summary when clicked
        chip = browser.find_element(By.CSS_SELECTOR, '.ev[data-type="rollback_global"]')
        chip.click()
        assert "supervisor: GLOBAL ROLLBACK" in browser.find_element(By.ID, "latest").text

        # the planted <script> and <img onerror> never ran, nothing was blocked, no script failed
        assert browser.execute_script("return window.__pwned") is None
        assert browser.title == "reagent-local"
        assert browser.find_elements(By.CSS_SELECTOR, "img") == []
        assert browser.execute_script("return document.scripts.length") == 1
        assert [e for e in browser.get_log("browser") if e["level"] == "SEVERE"] == []
        runs = browser.find_element(By.ID, "runs").text
        assert "ok" in runs and OLYMPICS[:40] in runs

        browser.execute_script("window.scrollTo(0, 0)")
        height = browser.execute_script("return document.documentElement.scrollHeight")
        browser.set_window_size(1280, min(max(height + 160, 800), 2400))
        shot = tmp_path / "reagent-serve-page.png"
        assert browser.save_screenshot(str(shot)) and shot.stat().st_size > 10_000
        shutil.copyfile(shot, SCREENSHOT_COPY)
        browser.set_window_size(1400, 1000)

        # the full trace of the run, served by the same server
        browser.get(link)
        assert browser.title.startswith("reagent trace: What is the population")
        assert browser.execute_script("return window.__pwned") is None
        assert [e for e in browser.get_log("browser") if e["level"] == "SEVERE"] == []
    with capsys.disabled():
        print(f"\nscreenshot of the serve page: {shot} (copy: {SCREENSHOT_COPY})")


@pytest.mark.browser
def test_the_page_asks_for_the_api_key_and_then_works(browser, tmp_path):  # noqa: F811
    from selenium.webdriver.common.by import By

    with running(scripted_service(tmp_path / "log.duckdb", api_key="s3cret")) as srv:
        browser.delete_all_cookies()
        browser.get(srv.url + "/")
        _wait(browser, lambda d: d.find_element(By.ID, "key-box").is_displayed())
        assert "needs its API key" in browser.find_element(By.ID, "status").text
        browser.find_element(By.ID, "key").send_keys("s3cret")
        browser.find_element(By.ID, "key-save").click()
        _wait(browser, lambda d: "model scripted-olympics" in d.find_element(By.ID, "served").text)
        _ask(browser, OLYMPICS)
        _wait(browser, lambda d: d.find_element(By.ID, "result").is_displayed(), timeout=60)
        assert browser.find_element(By.ID, "answer").text == "508,000"
        browser.delete_all_cookies()
