"""The DuckDB event log: schema, writing, reading, errors, readers during a run, SIGKILL."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import duckdb
import pytest

from reagent_local.core import log as logmod
from reagent_local.errors import LogError, RunNotFoundError
from reagent_local.core.log import SCHEMA_VERSION, EventLog

REPO = Path(__file__).resolve().parents[1]


def test_new_log_is_migrated_once(tmp_path: Path) -> None:
    path = tmp_path / "log.duckdb"
    with EventLog(path) as log:
        assert log.schema_version == SCHEMA_VERSION
    with EventLog(path):
        pass
    con = duckdb.connect(str(path), read_only=True)
    assert con.execute("SELECT version FROM schema_version ORDER BY version").fetchall() == [
        (v,) for v in range(1, SCHEMA_VERSION + 1)]
    con.close()


def test_numbered_migrations_upgrade_old_logs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "log.duckdb"
    with EventLog(path) as log:
        run = log.start_run("q", {})
        log.append(run, "note", agent="a", payload={}, time=1)
    extra = ("events.tag", ["ALTER TABLE events ADD COLUMN tag VARCHAR"])
    monkeypatch.setattr(logmod, "MIGRATIONS", [*logmod.MIGRATIONS, extra])
    with pytest.raises(LogError, match="open it once for writing"):
        EventLog(path, read_only=True)
    with EventLog(path) as log:
        assert log.schema_version == SCHEMA_VERSION + 1 and len(log.events(run)) == 1
        log.append(run, "note", agent="a", payload={}, time=2)  # still works with the new column
    con = duckdb.connect(str(path), read_only=True)
    assert con.execute("SELECT max(version), count(*) FROM schema_version").fetchone() == (SCHEMA_VERSION + 1,) * 2
    assert "tag" in [r[0] for r in con.execute("DESCRIBE events").fetchall()]
    con.close()


def test_migrations_commit_all_or_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "log.duckdb"
    broken = ("fails half way", ["ALTER TABLE no_such_table ADD COLUMN x INTEGER"])
    monkeypatch.setattr(logmod, "MIGRATIONS", [*logmod.MIGRATIONS, broken])
    with pytest.raises(duckdb.Error):
        EventLog(path)
    con = duckdb.connect(str(path), read_only=True)
    assert con.execute("SELECT count(*) FROM information_schema.tables").fetchone()[0] == 0  # not even schema_version
    con.close()


@pytest.mark.parametrize("left_behind", ["an empty database", "an empty schema_version table", "a file of 0 bytes"])
def test_a_log_whose_creation_was_cut_off_reads_as_empty_and_takes_writes(tmp_path: Path, left_behind: str) -> None:
    # what a writer killed while creating the log can leave (older versions created schema_version
    # before their first migration's transaction)
    path = tmp_path / "log.duckdb"
    if left_behind == "a file of 0 bytes":
        path.write_bytes(b"")
    else:
        con = duckdb.connect(str(path))
        if left_behind == "an empty schema_version table":
            con.execute("CREATE TABLE schema_version (version INTEGER PRIMARY KEY, description VARCHAR, "
                        "applied_at DOUBLE)")
        con.close()
    before = path.read_bytes()
    with EventLog(path, read_only=True) as reader:
        assert reader.runs() == [] and reader.schema_version == SCHEMA_VERSION
        with pytest.raises(RunNotFoundError):
            reader.get_run("r1")
    assert path.read_bytes() == before  # a reader writes nothing
    with EventLog(path) as writer:
        run = writer.start_run("q", {})
    with EventLog(path, read_only=True) as reader:
        assert [r["run_id"] for r in reader.runs()] == [run]


def test_run_life_cycle(tmp_path: Path) -> None:
    with EventLog(tmp_path / "log.duckdb") as log:
        run = log.start_run("Who?", {"llm": {"model": "m"}})
        e1 = log.append(run, "message", agent="retriever", payload={"kind": "inform", "n": 1}, time=1)
        e2 = log.append(run, "round", agent="channel", payload={"round": 1}, time=2, parent_seq=e1.seq)
        event, cp = log.add_checkpoint(run, time=3, label="before step 1", snapshot={"agents": {}, "global": []},
                                       agent="system")
        call_id = log.record_llm_call(run, model="m", prompt=[{"role": "user", "content": "hi"}], output='{"a":1}',
                                      prompt_tokens=5, completion_tokens=3, seconds=0.25, agent="verifier",
                                      seq=e2.seq)
        log.finish_run(run, "Sacramento", "ok", {"llm_calls": 1}, uncertain=True, payload={"why": "x"})
        assert [e.type for e in log.events(run)] == ["message", "round", "checkpoint"]
        assert log.events(run)[1].parent_seq == e1.seq and e2.seq > e1.seq
        assert [e.seq for e in log.events(run, types=["checkpoint"])] == [event.seq]
        assert event.payload == {"checkpoint_id": cp.id, "label": "before step 1"}
        assert log.checkpoints(run) == [cp] and cp.seq == event.seq
        calls = log.llm_calls(run)
        assert calls[0]["id"] == call_id and calls[0]["prompt"][0]["content"] == "hi" and calls[0]["seq"] == e2.seq
        info = log.get_run(run)
        assert (info["status"], info["answer"], info["uncertain"], info["events"]) == ("ok", "Sacramento", True, 3)
        assert info["config"] == {"llm": {"model": "m"}} and info["stats"] == {"llm_calls": 1}
        second = log.start_run("Again?", {})
        assert [r["run_id"] for r in log.runs(last=1)] == [second]
        assert {r["run_id"] for r in log.runs()} == {run, second}


def test_errors_users_can_act_on(tmp_path: Path) -> None:
    path = tmp_path / "log.duckdb"
    with EventLog(path) as log:
        run = log.start_run("q", {}, run_id="r1")
        with pytest.raises(LogError, match="already exists"):
            log.start_run("q", {}, run_id="r1")
        with pytest.raises(RunNotFoundError, match="no run 'nope'"):
            log.get_run("nope")
    with EventLog(path, read_only=True) as reader:
        assert reader.get_run(run)["question"] == "q"
        with pytest.raises(LogError, match="read-only"):
            reader.append(run, "x", agent="a", payload={}, time=1)
    with pytest.raises(LogError, match="no log at"):
        EventLog(tmp_path / "missing.duckdb", read_only=True)
    bad = tmp_path / "notes.txt"
    bad.write_text("not a database at all\n" * 100)
    for read_only in (False, True):
        with pytest.raises(LogError, match="is not a DuckDB database"):
            EventLog(bad, read_only=read_only)


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "log.duckdb"
    EventLog(path).close()
    con = duckdb.connect(str(path))
    con.execute("INSERT INTO schema_version VALUES (?, 'future', 0)", [SCHEMA_VERSION + 1])
    con.close()
    with pytest.raises(LogError, match="newer than this reagent"):
        EventLog(path)


def test_in_process_reader_while_writing_sees_every_committed_event(tmp_path: Path) -> None:
    path = tmp_path / "log.duckdb"
    with EventLog(path) as writer:
        run = writer.start_run("q", {})
        for t in range(1, 4):
            writer.append(run, "note", agent="a", payload={"t": t}, time=t)
        with EventLog(path, read_only=True) as reader:
            assert [e.payload["t"] for e in reader.events(run)] == [1, 2, 3]
            writer.append(run, "note", agent="a", payload={"t": 4}, time=4)
            assert len(reader.events(run)) == 4  # live, not a snapshot
            with pytest.raises(LogError, match="read-only"):
                reader.append(run, "note", agent="a", payload={}, time=5)
    assert len(EventLog(path, read_only=True).events(run)) == 4


def test_the_file_is_released_between_bursts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(logmod, "HOLD_SECONDS", 0.05)
    monkeypatch.setattr(logmod, "MAX_HOLD_SECONDS", 60.0)  # a loaded machine must not end the burst early
    path = tmp_path / "log.duckdb"
    log = EventLog(path)
    run = log.start_run("q", {})
    log.append(run, "note", agent="a", payload={}, time=1)
    shared = logmod._SharedFile.of(path)
    assert shared.con is not None  # held during the burst
    deadline = time.monotonic() + 5
    while shared.con is not None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert shared.con is None and shared.lock.held is None  # idle: closed, lock released
    duckdb.connect(str(path)).close()  # any other process could open it now
    log.append(run, "note", agent="a", payload={}, time=2)  # reopens transparently
    assert len(log.events(run)) == 2
    log.close()


def test_writers_in_threads_and_two_writers_in_one_process_are_serialised(tmp_path: Path) -> None:
    path = tmp_path / "log.duckdb"
    first, second = EventLog(path), EventLog(path)
    run = first.start_run("q", {})

    def write(log: EventLog, who: str) -> None:
        for t in range(40):
            log.append(run, "note", agent=who, payload={"t": t}, time=t)

    threads = [threading.Thread(target=write, args=(log, f"w{i % 2}")) for i, log in enumerate([first, second] * 2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    events = first.events(run)
    assert len(events) == 160 and len({e.seq for e in events}) == 160
    assert sorted(e.payload["t"] for e in events if e.agent == "w0") == sorted(list(range(40)) * 2)
    first.close()
    with pytest.raises(LogError, match="closed"):
        first.events(run)
    second.close()


def test_in_memory_log() -> None:
    with EventLog(":memory:") as log:
        run = log.start_run("q", {})
        log.append(run, "note", agent="a", payload={}, time=1)
        assert len(log.events(run)) == 1
    with pytest.raises(LogError, match="read-only"):
        EventLog(":memory:", read_only=True)


def _child(code: str, *args: str) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(code), *args], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


HOLDING_WRITER = """
    import sys
    from reagent_local.core.log import EventLog
    log = EventLog(sys.argv[1])
    run = log.start_run("q", {}, run_id="held")
    for t in range(1, 51):
        log.append(run, "note", agent="child", payload={"t": t}, time=t)
    print("written", flush=True)
    sys.stdin.readline()  # keep the EventLog (a notebook's ReAgent) while the parent uses the file
    log.append(run, "note", agent="child", payload={"t": 51}, time=51)
    print("again", flush=True)
    sys.stdin.read()
    log.close()
"""


def test_a_process_holding_the_log_does_not_lock_others_out(tmp_path: Path) -> None:
    path = tmp_path / "log.duckdb"
    child = _child(HOLDING_WRITER, str(path))
    try:
        assert child.stdout.readline().strip() == "written", child.stderr.read()
        with EventLog(path, read_only=True) as reader:
            assert [e.time for e in reader.events("held")] == list(range(1, 51))
            assert reader.get_run("held")["status"] == "running"  # its process is alive
        with EventLog(path) as log:  # a second writer (another `reagent ask`) works too
            mine = log.start_run("mine", {})
            log.append(mine, "note", agent="parent", payload={}, time=1)
        child.stdin.write("go\n")
        child.stdin.flush()
        assert child.stdout.readline().strip() == "again", child.stderr.read()
    finally:
        child.communicate("", timeout=60)
    assert child.returncode == 0
    with EventLog(path, read_only=True) as log:
        assert len(log.events("held")) == 51 and len(log.events(mine)) == 1


CONCURRENT_WRITER = """
    import sys
    from reagent_local.core.log import EventLog
    log = EventLog(sys.argv[1])
    run = log.start_run("q", {}, run_id=sys.argv[2])
    for t in range(1, 101):
        log.append(run, "note", agent=sys.argv[2], payload={"t": t}, time=t)
    log.finish_run(run, "a", "ok", {})
    log.close()
"""


def test_four_processes_write_one_log_and_every_event_lands_once(tmp_path: Path) -> None:
    path = tmp_path / "log.duckdb"
    children = [_child(CONCURRENT_WRITER, str(path), f"w{i}") for i in range(4)]
    for child in children:
        _, err = child.communicate(timeout=120)
        assert child.returncode == 0, err
    with EventLog(path, read_only=True) as log:
        seqs = []
        for i in range(4):
            events = log.events(f"w{i}")
            assert [e.time for e in events] == list(range(1, 101))
            assert {e.agent for e in events} == {f"w{i}"}  # no run's events in another's
            seqs += [e.seq for e in events]
            assert log.get_run(f"w{i}")["status"] == "ok"
        assert len(set(seqs)) == 400


KILLED_WRITER = """
    import sys
    from reagent_local.core.log import EventLog
    log = EventLog(sys.argv[1])
    run = log.start_run("q", {}, run_id="killed")
    t = 0
    while True:
        t += 1
        if t % 10 == 0:
            log.add_checkpoint(run, time=t, label=f"cp {t}", snapshot={"agents": {}, "global": [], "t": t},
                               agent="child")
        else:
            log.append(run, "note", agent="child", payload={"t": t, "pad": "x" * 300}, time=t)
        print(t, flush=True)
"""


def test_sigkill_leaves_a_consistent_prefix(tmp_path: Path) -> None:
    path = tmp_path / "log.duckdb"
    child = _child(KILLED_WRITER, str(path))
    last = 0
    while last < 150:
        line = child.stdout.readline()
        assert line, child.stderr.read()
        last = int(line)
    os.kill(child.pid, signal.SIGKILL)
    child.wait(timeout=30)
    assert child.returncode == -signal.SIGKILL
    for read_only in (True, False):
        with EventLog(path, read_only=read_only) as log:
            events = log.events("killed")
            times = [e.time for e in events]
            assert times == list(range(1, len(times) + 1))  # a prefix, no gaps
            assert len(times) >= last  # every append that returned is there
            assert all(e.payload.get("pad") == "x" * 300 for e in events if e.type == "note")
            checkpoints = log.checkpoints("killed")
            assert [c.time for c in checkpoints] == [t for t in times if t % 10 == 0]
            assert all(c.snapshot["t"] == c.time for c in checkpoints)
            info = log.get_run("killed")
            assert info["status"] == "interrupted" and info["events"] == len(events)
            assert "process ended" in info["error"] and info["last_event"].startswith("child ")
    with EventLog(path) as log:  # the next writer marks it for good
        log.start_run("next", {})
    con = duckdb.connect(str(path), read_only=True)
    assert con.execute("SELECT status FROM runs WHERE run_id = 'killed'").fetchone() == ("interrupted",)
    con.close()


def test_a_full_disk_is_one_clear_error_and_the_log_stays_readable(tmp_path: Path) -> None:
    from process_support import small_fs

    with small_fs(tmp_path / "small", "3m") as folder:
        log = EventLog(folder / "log.duckdb")
        run = log.start_run("q", {})
        written = 0
        with pytest.raises(LogError, match="disk holding the log .* is full") as info:
            while written < 100_000:
                log.append(run, "note", agent="a", payload={"pad": os.urandom(2000).hex()}, time=written)
                written += 1
        assert "free some space" in str(info.value) and written > 10
        log.close()
        with EventLog(folder / "log.duckdb", read_only=True) as reader:
            assert [e.time for e in reader.events(run)] == list(range(written))  # every append that returned


def test_an_unwritable_folder_is_a_clear_error(tmp_path: Path) -> None:
    from process_support import read_only

    folder = tmp_path / "home"
    folder.mkdir()
    with EventLog(folder / "log.duckdb") as log:
        run = log.start_run("q", {})
    (folder / "log.duckdb.lock").unlink()  # as on a home copied read-only: no lock files
    (folder / "log.duckdb.queue").unlink()
    with read_only(folder):
        with pytest.raises(LogError, match="not writable"):
            EventLog(folder / "log.duckdb")
        with EventLog(folder / "log.duckdb", read_only=True) as reader:  # `trace list` still works
            assert reader.get_run(run)["question"] == "q"
