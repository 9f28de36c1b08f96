"""The HTML trace in headless Chromium: click the rollbacks, see their details; planted markup stays text.

Needs the Debian packages `chromium` and `chromium-driver` (scripts/test.sh installs
them); without them the test is skipped with the reason, never passed.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

from reagent_local.core.log import EventLog
from reagent_local.trace import load_trace
from reagent_local.trace.html import write_html
from scenario_runs import WRONG_CAPITAL, WRONG_STATE, challenge_run, channel_run, nonsense_run, rollback_run

SCREENSHOT_COPY = Path(tempfile.gettempdir()) / "reagent-trace-screenshot.png"
FLAGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--window-size=1400,1000"]


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    """One headless Chromium for the module (starting it costs about 2 s)."""
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (pip install -e '.[test]')")
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.chrome.service import Service

    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    driver_path = shutil.which("chromedriver")
    if not binary or not driver_path:
        pytest.skip("chromium / chromedriver not found: install the Debian packages chromium and chromium-driver "
                    "(scripts/test.sh does when run as root)")
    options = webdriver.ChromeOptions()
    for flag in FLAGS + [f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}"]:
        options.add_argument(flag)
    options.binary_location = binary
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    try:
        driver = webdriver.Chrome(options=options, service=Service(driver_path))
    except WebDriverException as exc:
        pytest.skip(f"chromium could not be started: {str(exc).splitlines()[0]}")
    yield driver
    driver.quit()


@pytest.fixture
def page(tmp_path) -> Path:
    with EventLog(tmp_path / "log.duckdb") as log:
        trace = load_trace(log, rollback_run(log))
    return write_html(trace, tmp_path / "trace.html")


def details_after_click(driver, selector: str) -> str:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    mark = driver.find_element(By.CSS_SELECTOR, selector)
    mark.click()
    WebDriverWait(driver, 5).until(lambda d: "selected" in (mark.get_attribute("class") or ""))
    return driver.find_element(By.ID, "details").text


@pytest.mark.browser
def test_clicking_rollbacks_shows_their_details_and_planted_script_never_runs(browser, page, tmp_path, capsys):
    from selenium.webdriver.common.by import By

    browser.get_log("browser")  # drop what earlier pages logged
    browser.get(page.as_uri())
    title = browser.title
    assert title.startswith("reagent trace: What is the population")
    lanes = [e.text for e in browser.find_elements(By.CSS_SELECTOR, ".lane-label")]
    assert lanes == ["decomposer", "retriever", "verifier", "assembler", "supervisor", "channel"]
    # start, plan, and one before each attempt at a step: 1, 1 (retry), 2, 4, 3, 4 (after the rollback)
    assert len(browser.find_elements(By.CSS_SELECTOR, ".cp-line")) == 8
    assert len(browser.find_elements(By.CSS_SELECTOR, "path.arrow.local")) == 1
    assert len(browser.find_elements(By.CSS_SELECTOR, "path.arrow.global")) == 1
    abandoned = browser.find_elements(By.CSS_SELECTOR, ".mark.abandoned")
    assert len(abandoned) == 2  # the two statements the verifier held and a rollback discarded

    text = details_after_click(browser, '.mark[data-type="rollback_local"]')
    assert text.startswith("Local rollback\n")
    assert "Local rollback: verifier went back to checkpoint" in text and "before step 1" in text
    assert f"-> {WRONG_STATE}" in text and "DISCARDED STATEMENTS (1)" in text.upper()

    # the step-1 retrieval carries the passage with the planted markup: shown as text
    informs = browser.find_elements(By.CSS_SELECTOR, '.mark[data-kind="inform"]')
    seq = next(m.get_attribute("data-seq") for m in informs if "(step 1," in (m.get_attribute("aria-label") or ""))
    text = details_after_click(browser, f'.mark[data-kind="inform"][data-seq="{seq}"]')
    assert "</script><script>window.__pwned = 1;" in text and '<img src=x onerror="window.__pwned = 2">' in text

    text = details_after_click(browser, '.mark[data-type="rollback_global"]')
    assert "Global rollback: every agent went back to checkpoint" in text and "before step 4" in text
    assert f"California? -> {WRONG_CAPITAL}" in text and "DISCARDED STATEMENTS (1)" in text.upper()
    assert "capital(California) has one value" in text and "LLM call #" in text

    # the two capitals met in one round: the channel escalated them to the supervisor
    text = details_after_click(browser, '.mark[data-type="escalate"]')
    assert text.startswith("Escalation\n") and "Los Angeles" in text and "Sacramento" in text

    text = details_after_click(browser, '.mark[data-type="rollback_global"]')
    # expand the LLM call behind the discarded statement: rendered prompt and raw output
    browser.find_element(By.CSS_SELECTOR, "#details details.call > summary").click()
    call_text = browser.find_element(By.CSS_SELECTOR, "#details details.call").text
    assert "RENDERED PROMPT" in call_text and f'"answer": "{WRONG_CAPITAL}"' in call_text

    assert browser.execute_script("return window.__pwned") is None
    assert browser.title == title
    assert browser.execute_script("return document.scripts.length") == 2
    assert browser.find_elements(By.CSS_SELECTOR, "img") == []
    errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert errors == []  # no script error, no CSP violation, no blocked request

    browser.execute_script("window.scrollTo(0, 0)")
    height = browser.execute_script("return document.documentElement.scrollHeight")
    browser.set_window_size(1400, min(max(height, 900), 4000))
    shot = tmp_path / "reagent-trace.png"
    assert browser.save_screenshot(str(shot)) and shot.stat().st_size > 10_000
    shutil.copyfile(shot, SCREENSHOT_COPY)
    with capsys.disabled():
        print(f"\nscreenshot of the trace page: {shot} (copy: {SCREENSHOT_COPY})")


@pytest.mark.browser
def test_keyboard_selects_marks_and_steps_through_time(browser, page):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    browser.get(page.as_uri())
    first = browser.find_element(By.CSS_SELECTOR, '.mark[data-type="rollback_local"]')
    first.send_keys(Keys.ENTER)
    assert "Local rollback" in browser.find_element(By.ID, "details").text
    browser.switch_to.active_element.send_keys(Keys.ARROW_RIGHT)
    selected = browser.find_element(By.CSS_SELECTOR, ".mark.selected")
    assert int(selected.get_attribute("data-seq")) > int(first.get_attribute("data-seq"))
    assert browser.current_url.endswith("#seq-" + selected.get_attribute("data-seq"))


@pytest.mark.browser
@pytest.mark.parametrize("make_run", [challenge_run, nonsense_run, channel_run])
def test_every_mark_of_other_runs_opens_without_script_errors(browser, tmp_path, make_run):
    from selenium.webdriver.common.by import By

    with EventLog(tmp_path / "log.duckdb") as log:
        trace = load_trace(log, make_run(log))
    browser.get_log("browser")
    browser.get(write_html(trace, tmp_path / "trace.html").as_uri())
    marks = browser.find_elements(By.CSS_SELECTOR, ".mark")
    assert len(marks) >= len({it.type for it in trace.items} - {"round"})
    for mark in marks:
        browser.execute_script("arguments[0].dispatchEvent(new MouseEvent('click', {bubbles: true}))", mark)
        heading = browser.find_element(By.CSS_SELECTOR, "#details h2").text
        assert heading and "selected" in mark.get_attribute("class")
    assert [e for e in browser.get_log("browser") if e["level"] == "SEVERE"] == []
