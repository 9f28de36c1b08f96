"""`reagent trace list/show/html/export`, including while another process is writing the log."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from reagent_local.cli import main
from reagent_local.core.log import EventLog
from scenario_runs import WRONG_CAPITAL, rollback_run, simple_run


@pytest.fixture(scope="module")
def logged(tmp_path_factory):
    """A log file with the rollback scenario and a simple run after it."""
    path = tmp_path_factory.mktemp("trace") / "reagent-log.duckdb"
    with EventLog(path) as log:
        scenario, simple = rollback_run(log), simple_run(log)
    return path, scenario, simple


def run_cli(capsys, *args: str) -> tuple[int, str, str]:
    try:
        main(["trace", *args])
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def test_list_json_and_last(logged, capsys):
    path, scenario, simple = logged
    code, out, _ = run_cli(capsys, "list", "--json", "--log", str(path))
    runs = json.loads(out)
    assert code == 0 and [r["run_id"] for r in runs] == [simple, scenario]
    assert runs[1]["backtracks_local"] == 1 and runs[1]["backtracks_global"] == 1 and runs[1]["answer"] == "508,000"
    code, out, _ = run_cli(capsys, "list", "--last", "1", "--json", "--log", str(path))
    assert [r["run_id"] for r in json.loads(out)] == [simple]


def test_list_table_uses_the_configured_log_by_default(logged, capsys, monkeypatch):
    path, scenario, _ = logged
    monkeypatch.setenv("REAGENT_HOME", str(path.parent))  # paths.log = <home>/reagent-log.duckdb
    monkeypatch.setenv("COLUMNS", "100")
    code, out, _ = run_cli(capsys, "list")
    assert code == 0 and scenario in out and "508,000" in out and "1/1" in out


def test_show_by_prefix_prints_the_timeline(logged, capsys, monkeypatch):
    path, scenario, _ = logged
    monkeypatch.setenv("COLUMNS", "100")
    code, out, _ = run_cli(capsys, "show", scenario[:-1], "--log", str(path))
    flat = " ".join(out.split())
    assert code == 0 and f"run {scenario}" in flat
    assert "GLOBAL ROLLBACK" in flat and "LOCAL ROLLBACK" in flat and "MINIMAL CONFLICT SET" in flat
    assert f"-> {WRONG_CAPITAL}" in flat and "Answer: 508,000" in flat
    assert max(len(line) for line in out.splitlines()) <= 100 and "\x1b[" not in out


def test_html_writes_the_page_and_prints_its_path(logged, capsys, tmp_path, monkeypatch):
    path, scenario, simple = logged
    target = tmp_path / "page.html"
    code, out, _ = run_cli(capsys, "html", scenario, "-o", str(target), "--log", str(path))
    assert code == 0 and out.strip() == str(target)
    assert 'id="trace-data"' in target.read_text(encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    code, out, _ = run_cli(capsys, "html", "last", "--log", str(path))
    assert code == 0 and (tmp_path / f"{simple}.html").is_file()


def test_export_json_to_stdout_and_to_a_file(logged, capsys, tmp_path):
    path, scenario, _ = logged
    code, out, _ = run_cli(capsys, "export", scenario, "--json", "--log", str(path))
    data = json.loads(out)
    assert code == 0 and data["run"]["run_id"] == scenario and data["format"] == "reagent-run-export"
    types = [e["type"] for e in data["events"]]
    assert "rollback_local" in types and "rollback_global" in types and "conflict_set" in types
    code, _, err = run_cli(capsys, "export", scenario, "-o", str(tmp_path / "run.json"), "--log", str(path))
    assert code == 0 and json.loads((tmp_path / "run.json").read_text())["events"] == data["events"]
    assert "wrote" in err


@pytest.mark.parametrize("args, message", [
    (("show", "nope"), "no run 'nope'"),
    (("show", "2"), "matches 2 runs"),
    (("html", "nope", "-o", "x.html"), "no run 'nope'"),
    (("export", "nope"), "no run 'nope'"),
])
def test_unknown_runs_are_clear_errors(logged, capsys, args, message):
    path, _, _ = logged
    code, out, err = run_cli(capsys, *args, "--log", str(path))
    assert code == 1 and message in err and "Traceback" not in err and out == ""


def test_missing_log_is_a_clear_error(capsys, tmp_path):
    code, _, err = run_cli(capsys, "list", "--log", str(tmp_path / "none.duckdb"))
    assert code == 1 and "no log at" in err and "reagent ask" in err


WRITER = textwrap.dedent("""
    import sys
    from reagent_local.core.log import EventLog
    from reagent_local.core.workspace import Workspace
    from reagent_local.core.knowledge import make_statement
    log = EventLog(sys.argv[1])
    ws = Workspace.start(log, "Which question is still being answered?", {})
    ws.assert_statement("verifier", make_statement("half-way -> yes"))
    print(ws.run_id, flush=True)
    sys.stdin.readline()  # hold the log open (a run in progress) until the test is done reading
    ws.assert_statement("verifier", make_statement("after the readers -> yes"))
    ws.finish("yes", "ok", {})
    log.close()
    print("finished", flush=True)
""")


def test_inspection_works_while_another_process_writes(logged, capsys, tmp_path, monkeypatch):
    path = tmp_path / "busy.duckdb"
    path.write_bytes(logged[0].read_bytes())
    monkeypatch.setenv("COLUMNS", "100")
    child = subprocess.Popen([sys.executable, "-c", WRITER, str(path)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True, cwd=Path(__file__).resolve().parents[1])
    try:
        run_id = child.stdout.readline().strip()
        assert run_id, "the writer process did not start"
        code, out, _ = run_cli(capsys, "list", "--json", "--log", str(path))
        assert code == 0 and json.loads(out)[0]["run_id"] == run_id and json.loads(out)[0]["status"] == "running"
        code, out, _ = run_cli(capsys, "show", "last", "--log", str(path))
        assert code == 0 and "half-way -> yes" in out and "has not finished" in out
        code, out, _ = run_cli(capsys, "export", run_id, "--log", str(path))
        assert code == 0 and json.loads(out)["run"]["status"] == "running"
        child.stdin.write("go\n")
        child.stdin.flush()
        assert child.stdout.readline().strip() == "finished"  # the writer was not blocked by the readers
    finally:
        child.stdin.close()
        child.wait(timeout=30)
    assert child.returncode == 0
    code, out, _ = run_cli(capsys, "list", "--json", "--log", str(path))
    assert json.loads(out)[0]["status"] == "ok"


def test_a_killed_run_is_listed_as_interrupted_with_how_far_it_got(logged, capsys, tmp_path, monkeypatch):
    path = tmp_path / "killed.duckdb"
    path.write_bytes(logged[0].read_bytes())
    monkeypatch.setenv("COLUMNS", "160")
    child = subprocess.Popen([sys.executable, "-c", WRITER, str(path)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True, cwd=Path(__file__).resolve().parents[1])
    run_id = child.stdout.readline().strip()
    child.kill()  # SIGKILL: no chance to close the run
    child.wait(timeout=30)
    code, out, _ = run_cli(capsys, "list", "--json", "--log", str(path))
    row = json.loads(out)[0]
    assert code == 0 and row["run_id"] == run_id and row["status"] == "interrupted"
    assert row["events"] >= 1 and row["last_event"] == "verifier assert" and "process ended" in row["error"]
    code, out, _ = run_cli(capsys, "list", "--log", str(path))
    assert "interrupted" in out.splitlines()[1] and " running " not in out
    code, out, _ = run_cli(capsys, "show", run_id, "--log", str(path))
    assert code == 0 and "interrupted (2 events, last: verifier assert)" in out and "half-way -> yes" in out
