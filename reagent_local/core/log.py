"""The DuckDB event log: runs, append-only events, checkpoints, LLM calls and answers.

DuckDB lets one process write a database file, and while it does, no other process
can open the file at all, not even read-only (measured with duckdb 2.0.1). So:

- a writer keeps one connection for its lifetime; a lock serialises its writers
  (threads, and other EventLog objects on the same file in this process); every
  append is its own committed transaction, so a killed process loses nothing
  that an append had returned;
- a reader (``read_only=True``) opens the file directly when no writer holds it;
  when one does, it copies the file and its write-ahead log into a temporary folder
  and reads the copy: a consistent snapshot as of the copy (DuckDB replays the
  copied WAL like after a crash; a torn last record is dropped);
- a writer that finds the file held (by a reader that is still open) retries for a
  few seconds, then raises LogError.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import threading
import time as _time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence

import duckdb

from ..errors import LogError, RunNotFoundError

# Numbered migrations: entry i brings the schema from version i to i + 1. Append only.
MIGRATIONS: list[tuple[str, list[str]]] = [
    ("runs, events, checkpoints, llm_calls, answers", [
        "CREATE SEQUENCE event_seq START 1",
        "CREATE SEQUENCE checkpoint_id START 1",
        "CREATE SEQUENCE llm_call_id START 1",
        """CREATE TABLE runs (run_id VARCHAR PRIMARY KEY, question VARCHAR NOT NULL, config JSON NOT NULL,
           status VARCHAR NOT NULL, started_at DOUBLE NOT NULL, finished_at DOUBLE, stats JSON)""",
        """CREATE TABLE events (seq BIGINT PRIMARY KEY, run_id VARCHAR NOT NULL, time BIGINT NOT NULL,
           wall_time DOUBLE NOT NULL, agent VARCHAR NOT NULL, type VARCHAR NOT NULL, payload JSON NOT NULL,
           parent_seq BIGINT)""",
        """CREATE TABLE checkpoints (id BIGINT PRIMARY KEY, run_id VARCHAR NOT NULL, seq BIGINT NOT NULL,
           time BIGINT NOT NULL, label VARCHAR NOT NULL, snapshot JSON NOT NULL)""",
        """CREATE TABLE llm_calls (id BIGINT PRIMARY KEY, run_id VARCHAR, seq BIGINT, agent VARCHAR,
           model VARCHAR NOT NULL, prompt JSON NOT NULL, output VARCHAR NOT NULL, prompt_tokens INTEGER,
           completion_tokens INTEGER, seconds DOUBLE, wall_time DOUBLE NOT NULL)""",
        """CREATE TABLE answers (run_id VARCHAR PRIMARY KEY, answer VARCHAR, uncertain BOOLEAN NOT NULL,
           payload JSON NOT NULL)""",
    ]),
]
SCHEMA_VERSION = len(MIGRATIONS)
WRITER_WAIT_SECONDS = 5.0
# A reader during a run replays the copied write-ahead log; keeping it small keeps that fast
# (measured: ~150 ms to open with a 1.8 MB WAL at DuckDB's default 16 MB threshold, ~60 ms at 1 MB).
WAL_CHECKPOINT_THRESHOLD = "1MB"

_PATH_LOCKS: dict[str, threading.RLock] = {}
_PATH_LOCKS_GUARD = threading.Lock()
_EVENT_COLUMNS = "seq, run_id, time, wall_time, agent, type, payload, parent_seq"
_INSERT_EVENT = f"INSERT INTO events ({_EVENT_COLUMNS}) VALUES (nextval('event_seq'), ?, ?, ?, ?, ?, ?, ?) RETURNING seq"
_LLM_COLUMNS = ("id, run_id, seq, agent, model, prompt, output, prompt_tokens, completion_tokens, seconds, "
                "wall_time")
_RUN_KEYS = ("run_id", "question", "config", "status", "started_at", "finished_at", "stats", "answer", "uncertain",
             "answer_payload", "events")


@dataclass(frozen=True)
class Event:
    """One logged event; ``time`` is the run's logical clock, ``wall_time`` unix seconds."""

    seq: int
    run_id: str
    time: int
    wall_time: float
    agent: str
    type: str
    payload: dict[str, Any]
    parent_seq: int | None = None


@dataclass(frozen=True)
class Checkpoint:
    """A checkpoint: the event it was taken at and the snapshot of the states then."""

    id: int
    run_id: str
    seq: int
    time: int
    label: str
    snapshot: dict[str, Any]


def _path_lock(path: Path) -> threading.RLock:
    with _PATH_LOCKS_GUARD:
        return _PATH_LOCKS.setdefault(str(path), threading.RLock())


def _stamp(path: Path) -> tuple:
    st = path.stat()
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def _copy_for_reading(path: Path, folder: Path, attempts: int = 20) -> Path:
    """Copy the database and its WAL; retry when the database changed during the copy (a checkpoint)."""
    target, wal = folder / path.name, path.with_name(path.name + ".wal")
    for _ in range(attempts):
        before = _stamp(path)
        shutil.copyfile(path, target)
        try:
            shutil.copyfile(wal, folder / wal.name)
        except FileNotFoundError:
            (folder / wal.name).unlink(missing_ok=True)
        if _stamp(path) == before:
            return target
        _time.sleep(0.05)
    raise LogError(f"could not take a stable copy of {path}: the writer keeps checkpointing",
                   hint="retry, or wait for the run to finish")


def _is_lock_error(exc: Exception) -> bool:
    return "lock" in str(exc).lower()


def _connect(path: Path, read_only: bool) -> duckdb.DuckDBPyConnection:
    """Open the file, translating DuckDB's errors into LogError with a hint."""
    try:
        return duckdb.connect(str(path), read_only=read_only)
    except duckdb.IOException as exc:
        text = str(exc)
        if "not a valid DuckDB database" in text:
            raise LogError(f"{path} is not a DuckDB database",
                           hint="point paths.log_path at a reagent log file or a new path") from None
        raise


class EventLog:
    """Append-only store of runs and their events; see the module docstring for concurrency."""

    def __init__(self, path: str | Path, read_only: bool = False) -> None:
        """Open (creating and migrating when writing) the log at ``path``; ``":memory:"`` for a private one."""
        self.path = Path(path).expanduser()
        self.read_only = read_only
        self.in_memory = str(path) == ":memory:"
        self.is_snapshot_copy = False
        self._tmp: Path | None = None
        if self.in_memory:  # a private database for tests and throwaway runs
            if read_only:
                raise LogError("an in-memory log cannot be opened read-only", hint="give a file path")
            self._lock, self._con = threading.RLock(), duckdb.connect(":memory:")
        else:
            self._lock = _path_lock(self.path.resolve())
            self._con = self._open_reader() if read_only else self._open_writer()
        self.schema_version = self._check_schema()

    # -- opening -----------------------------------------------------------
    def _open_writer(self) -> duckdb.DuckDBPyConnection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        deadline = _time.monotonic() + WRITER_WAIT_SECONDS
        while True:
            try:
                con = _connect(self.path, read_only=False)
                con.execute(f"SET checkpoint_threshold = '{WAL_CHECKPOINT_THRESHOLD}'")
                return con
            except duckdb.IOException as exc:
                if not _is_lock_error(exc):
                    raise LogError(f"cannot open the log {self.path}: {exc}") from None
                if _time.monotonic() > deadline:
                    raise LogError(f"the log {self.path} is in use by another process ({exc})",
                                   hint="wait for that run to finish, or give this run another log path "
                                        "(paths.log_path)") from None
                _time.sleep(0.1)

    def _open_reader(self) -> duckdb.DuckDBPyConnection:
        if not self.path.is_file():
            raise LogError(f"no log at {self.path}",
                           hint="run `reagent ask ...` first, or point paths.log_path at an existing log")
        try:
            return _connect(self.path, read_only=True)
        except (duckdb.IOException, duckdb.ConnectionException) as exc:
            # held by a writer in another process (lock) or in this one (different configuration)
            if not (_is_lock_error(exc) or "different configuration" in str(exc)):
                raise LogError(f"cannot open the log {self.path}: {exc}") from None
        self._tmp = Path(tempfile.mkdtemp(prefix="reagent-log-"))
        self.is_snapshot_copy = True
        try:
            return _connect(_copy_for_reading(self.path, self._tmp), read_only=True)
        except BaseException:
            shutil.rmtree(self._tmp, ignore_errors=True)
            raise

    def _check_schema(self) -> int:
        with self._lock:
            has_table = self._con.execute(
                "SELECT count(*) FROM information_schema.tables WHERE table_name = 'schema_version'").fetchone()[0]
            latest, version = len(MIGRATIONS), 0
            if has_table:
                version = self._con.execute("SELECT max(version) FROM schema_version").fetchone()[0] or 0
            if version > latest:
                raise LogError(f"the log {self.path} has schema version {version}, newer than this reagent ({latest})",
                               hint="upgrade reagent-local, or use another log path")
            if version < latest:
                if self.read_only:
                    raise LogError(f"the log {self.path} has schema version {version}; this reagent needs {latest}",
                                   hint="open it once for writing (any `reagent ask`) to migrate it")
                self._migrate(version)
            return latest

    def _migrate(self, version: int) -> None:
        self._con.execute("CREATE TABLE IF NOT EXISTS schema_version "
                          "(version INTEGER PRIMARY KEY, description VARCHAR, applied_at DOUBLE)")
        for number, (description, statements) in enumerate(MIGRATIONS[version:], start=version + 1):
            with self._transaction() as con:
                for sql in statements:
                    con.execute(sql)
                con.execute("INSERT INTO schema_version (version, description, applied_at) VALUES (?, ?, ?)",
                            [number, description, _time.time()])

    @contextmanager
    def _transaction(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """BEGIN ... COMMIT under the writer lock; ROLLBACK (SQL, not a logical rollback) on error."""
        with self._lock:
            con = self._connection()
            con.execute("BEGIN TRANSACTION")
            try:
                yield con
            except BaseException:
                con.execute("ROLLBACK")
                raise
            con.execute("COMMIT")

    def _connection(self) -> duckdb.DuckDBPyConnection:
        if self._con is None:
            raise LogError(f"the log {self.path} is closed", hint="open a new EventLog")
        return self._con

    def _query(self, sql: str, args: Sequence[Any] = ()) -> list[tuple]:
        """Run one statement (its own committed transaction) and fetch its rows, under the lock."""
        with self._lock:
            return self._connection().execute(sql, list(args)).fetchall()

    def _writable(self) -> None:
        if self.read_only:
            raise LogError(f"the log {self.path} was opened read-only",
                           hint="open EventLog(path) without read_only to write")

    # -- writing -------------------------------------------------------------
    def start_run(self, question: str, config: Mapping[str, Any], run_id: str | None = None) -> str:
        """Create a run (status 'running') and return its id."""
        self._writable()
        run_id = run_id or _time.strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6]
        with self._transaction() as con:
            if con.execute("SELECT count(*) FROM runs WHERE run_id = ?", [run_id]).fetchone()[0]:
                raise LogError(f"run {run_id} already exists in {self.path}", hint="omit run_id to get a fresh one")
            con.execute("INSERT INTO runs (run_id, question, config, status, started_at) VALUES (?, ?, ?, 'running', ?)",
                        [run_id, question, json.dumps(dict(config), default=str), _time.time()])
        return run_id

    def append(self, run_id: str, type: str, *, agent: str, payload: Mapping[str, Any], time: int,
               parent_seq: int | None = None) -> Event:
        """Append one event and commit it; returns it with its sequence number."""
        self._writable()
        wall, body = _time.time(), json.dumps(payload, ensure_ascii=False)
        seq = self._query(_INSERT_EVENT, [run_id, time, wall, agent, type, body, parent_seq])[0][0]
        # the payload as a reader will see it (tuples become lists), so live and replayed events are equal
        return Event(seq, run_id, time, wall, agent, type, json.loads(body), parent_seq)

    def add_checkpoint(self, run_id: str, *, time: int, label: str, snapshot: Mapping[str, Any], agent: str,
                       parent_seq: int | None = None) -> tuple[Event, Checkpoint]:
        """Append a 'checkpoint' event and its snapshot row in one transaction."""
        self._writable()
        wall = _time.time()
        with self._transaction() as con:
            cid = con.execute("SELECT nextval('checkpoint_id')").fetchone()[0]
            payload = {"checkpoint_id": cid, "label": label}
            seq = con.execute(_INSERT_EVENT, [run_id, time, wall, agent, "checkpoint", json.dumps(payload),
                                              parent_seq]).fetchone()[0]
            con.execute("INSERT INTO checkpoints (id, run_id, seq, time, label, snapshot) VALUES (?, ?, ?, ?, ?, ?)",
                        [cid, run_id, seq, time, label, json.dumps(snapshot, ensure_ascii=False)])
        return (Event(seq, run_id, time, wall, agent, "checkpoint", payload, parent_seq),
                Checkpoint(cid, run_id, seq, time, label, dict(snapshot)))

    def record_llm_call(self, run_id: str | None, *, model: str, prompt: Sequence[Mapping[str, Any]] | str,
                        output: str, prompt_tokens: int | None, completion_tokens: int | None,
                        seconds: float | None, agent: str | None = None, seq: int | None = None) -> int:
        """Log one LLM call (rendered messages, raw output, tokens, seconds); returns its id."""
        self._writable()
        return self._query(
            f"INSERT INTO llm_calls ({_LLM_COLUMNS}) VALUES (nextval('llm_call_id'), ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "RETURNING id",
            [run_id, seq, agent, model, json.dumps(prompt, ensure_ascii=False), output, prompt_tokens,
             completion_tokens, seconds, _time.time()])[0][0]

    def finish_run(self, run_id: str, answer: str | None, status: str, stats: Mapping[str, Any], *,
                   uncertain: bool = False, payload: Mapping[str, Any] | None = None) -> None:
        """Close a run: its status and stats, and its answer row."""
        self._writable()
        self.get_run(run_id)
        with self._transaction() as con:
            con.execute("UPDATE runs SET status = ?, finished_at = ?, stats = ? WHERE run_id = ?",
                        [status, _time.time(), json.dumps(dict(stats), default=str), run_id])
            con.execute("INSERT OR REPLACE INTO answers (run_id, answer, uncertain, payload) VALUES (?, ?, ?, ?)",
                        [run_id, answer, uncertain, json.dumps(dict(payload or {}), default=str)])
        if not self.in_memory:
            self._query("CHECKPOINT")  # fold the WAL into the file, so a reader has no WAL to replay

    # -- reading -------------------------------------------------------------
    def events(self, run_id: str, *, types: Iterable[str] | None = None) -> list[Event]:
        """A run's events in sequence order (optionally only some types)."""
        sql, args = f"SELECT {_EVENT_COLUMNS} FROM events WHERE run_id = ?", [run_id]
        if types is not None:
            kinds = list(types)
            sql += f" AND type IN ({', '.join('?' * len(kinds))})" if kinds else " AND FALSE"
            args += kinds
        rows = self._query(sql + " ORDER BY seq", args)
        return [Event(r[0], r[1], r[2], r[3], r[4], r[5], json.loads(r[6]), r[7]) for r in rows]

    def checkpoints(self, run_id: str) -> list[Checkpoint]:
        """A run's checkpoints in order."""
        rows = self._query("SELECT id, run_id, seq, time, label, snapshot FROM checkpoints "
                           "WHERE run_id = ? ORDER BY seq", [run_id])
        return [Checkpoint(r[0], r[1], r[2], r[3], r[4], json.loads(r[5])) for r in rows]

    def llm_calls(self, run_id: str) -> list[dict[str, Any]]:
        """A run's LLM calls in order, prompts decoded."""
        rows = self._query(f"SELECT {_LLM_COLUMNS} FROM llm_calls WHERE run_id = ? ORDER BY id", [run_id])
        out = [dict(zip(_LLM_COLUMNS.split(", "), r)) for r in rows]
        for row in out:
            row["prompt"] = json.loads(row["prompt"])
        return out

    def runs(self, last: int = 20) -> list[dict[str, Any]]:
        """The most recent runs, newest first, with their answers and event counts."""
        return self._run_rows("ORDER BY r.started_at DESC, r.run_id DESC LIMIT ?", [int(last)])

    def get_run(self, run_id: str) -> dict[str, Any]:
        """One run with its answer, or RunNotFoundError."""
        rows = self._run_rows("WHERE r.run_id = ?", [run_id])
        if not rows:
            raise RunNotFoundError(f"no run {run_id!r} in {self.path}", hint="list runs with `reagent trace list`")
        return rows[0]

    def _run_rows(self, tail: str, args: list) -> list[dict[str, Any]]:
        rows = self._query(
            "SELECT r.run_id, r.question, r.config, r.status, r.started_at, r.finished_at, r.stats, a.answer, "
            "a.uncertain, a.payload, (SELECT count(*) FROM events e WHERE e.run_id = r.run_id) "
            "FROM runs r LEFT JOIN answers a USING (run_id) " + tail, args)
        out = [dict(zip(_RUN_KEYS, r)) for r in rows]
        for row in out:
            for key in ("config", "stats", "answer_payload"):
                row[key] = json.loads(row[key]) if row[key] is not None else None
        return out

    # -- closing -------------------------------------------------------------
    def close(self) -> None:
        """Close the connection (a writer checkpoints first); removes a reader's temporary copy."""
        with self._lock:
            if self._con is not None:
                if not self.read_only and not self.in_memory:
                    self._con.execute("CHECKPOINT")
                self._con.close()
                self._con = None
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None

    def __enter__(self) -> "EventLog":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
