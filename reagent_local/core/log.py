"""The DuckDB event log: runs, append-only events, checkpoints, LLM calls and answers.

Many processes share one log (asks in several terminals, a benchmark, a notebook,
trace readers). DuckDB lets one process write a database file, and while it does no
other process can open the file at all, not even read-only (measured with duckdb
2.0.1). So no process keeps the file open:

- every process reaches the file through one ``_SharedFile`` per path: a flock on
  ``LOG.lock`` (exclusive to write, shared to read) and a DuckDB connection opened
  under it. The connection is closed, and the lock released, once the file has been
  idle for ``HOLD_SECONDS``: a burst of events shares one open, and the file is free
  between bursts (a run spends its time in LLM calls, not in the log);
- a process that finds the file held waits on the flock (the kernel queues it and
  frees the lock of a killed holder), up to ``WAIT_SECONDS``; a program that ignores
  the lock (a DuckDB shell on the file) is retried with a bounded back-off;
- every append is its own committed transaction, so a killed process loses nothing
  that an append had returned;
- a run records its process (pid, host, process start) and a heartbeat: a run whose
  process is gone is shown, and marked by the next writer, as ``interrupted``.
See docs/core.md for the measured cost per event, alone and with 4 writers.
"""

from __future__ import annotations

import atexit
import errno
import json
import os
import threading
import time as _time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence

import duckdb

from ..errors import LogError, RunNotFoundError
from ..locks import FileLock, LockTimeout
from ..paths import is_disk_full
from . import liveness

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
    ("runs: the process that runs them (pid, host, start), heartbeat, error", [
        "ALTER TABLE runs ADD COLUMN pid INTEGER",
        "ALTER TABLE runs ADD COLUMN host VARCHAR",
        "ALTER TABLE runs ADD COLUMN proc_start BIGINT",
        "ALTER TABLE runs ADD COLUMN heartbeat_at DOUBLE",
        "ALTER TABLE runs ADD COLUMN error VARCHAR",
    ]),
]
SCHEMA_VERSION = len(MIGRATIONS)
WAIT_SECONDS = 120.0  # how long a process waits for another to release the file before a LogError
HOLD_SECONDS = 0.2  # a connection idle this long is closed and the file released to other processes
MAX_HOLD_SECONDS = 1.0  # a connection open this long is closed after its current use, so waiters get a turn
HEARTBEAT_SECONDS = 5.0  # a run's heartbeat is refreshed by its appends at most this often
# A reader during a run replays the copied write-ahead log; keeping it small keeps that fast
# (measured: ~150 ms to open with a 1.8 MB WAL at DuckDB's default 16 MB threshold, ~60 ms at 1 MB).
WAL_CHECKPOINT_THRESHOLD = "1MB"

_SHARED_FILES: dict[str, "_SharedFile"] = {}
_SHARED_FILES_GUARD = threading.Lock()
_EVENT_COLUMNS = "seq, run_id, time, wall_time, agent, type, payload, parent_seq"
_INSERT_EVENT = f"INSERT INTO events ({_EVENT_COLUMNS}) VALUES (nextval('event_seq'), ?, ?, ?, ?, ?, ?, ?) RETURNING seq"
_LLM_COLUMNS = ("id, run_id, seq, agent, model, prompt, output, prompt_tokens, completion_tokens, seconds, "
                "wall_time")
_RUN_KEYS = ("run_id", "question", "config", "status", "started_at", "finished_at", "stats", "answer", "uncertain",
             "answer_payload", "events", "pid", "host", "proc_start", "heartbeat_at", "error", "last_event")


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


def _is_lock_error(exc: Exception) -> bool:
    return "lock" in str(exc).lower()


def _never_written(path: Path) -> bool:
    """A file of 0 bytes: created, then its writer was killed before DuckDB wrote a header."""
    try:
        return path.stat().st_size == 0
    except OSError:
        return False


def _connect(path: Path, read_only: bool) -> duckdb.DuckDBPyConnection:
    """Open the file, translating DuckDB's errors into LogError with a hint."""
    if not read_only and _never_written(path):
        path.unlink()  # it holds nothing, and DuckDB refuses a file without a header; the caller holds the lock
    try:
        return duckdb.connect(str(path), read_only=read_only)
    except duckdb.IOException as exc:
        text = str(exc)
        if "not a valid DuckDB database" in text:
            raise LogError(f"{path} is not a DuckDB database",
                           hint="point paths.log_path at a reagent log file or a new path") from None
        if not read_only and not os.access(path.parent, os.W_OK):
            raise LogError(f"cannot write the log {path}: its folder is read-only",
                           hint="make REAGENT_HOME writable, or point paths.log_path at a writable place") from None
        raise


class _SharedFile:
    """This process's access to one log file: one flock descriptor, at most one connection.

    ``session`` hands out the connection (opening it, under the lock, when needed);
    a timer closes it once idle for HOLD_SECONDS, which releases the file.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lock = FileLock(path.with_name(path.name + ".lock"), purpose="writing the reagent log")
        # the turnstile: whoever waits for the file holds it, so neither a stream of readers nor a
        # busy writer re-entering at once can starve a waiter (flock alone is not fair)
        self.turnstile = FileLock(path.with_name(path.name + ".queue"), purpose="waiting for the reagent log")
        self.opened_at = 0.0
        self.depth = 0  # sessions open in this process (they nest: a transaction's queries)
        self.users = 0  # open EventLog objects on this file in this process
        self.mutex = threading.RLock()  # serialises this process's threads and EventLog objects
        self.con: duckdb.DuckDBPyConnection | None = None
        self.writable = False
        self.last_used = 0.0
        self._timer: threading.Timer | None = None

    @classmethod
    def of(cls, path: Path) -> "_SharedFile":
        with _SHARED_FILES_GUARD:
            key = str(path.resolve())
            if key not in _SHARED_FILES:
                _SHARED_FILES[key] = cls(path)
            return _SHARED_FILES[key]

    @contextmanager
    def session(self, write: bool) -> Iterator[duckdb.DuckDBPyConnection]:
        with self.mutex:
            if self.con is not None and write and not self.writable:
                self.release()
            if self.con is None:
                self._open(write)
            self.depth += 1
            try:
                yield self.con
            finally:
                self.depth -= 1
                self.last_used = _time.monotonic()
                if self.depth == 0 and self.last_used - self.opened_at > MAX_HOLD_SECONDS:
                    self.release()
                elif self._timer is None:
                    self._schedule(HOLD_SECONDS)

    def _open(self, write: bool) -> None:
        if write:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        elif not self.path.is_file():
            raise LogError(f"no log at {self.path}",
                           hint="run `reagent ask ...` first, or point paths.log_path at an existing log")
        deadline = _time.monotonic() + WAIT_SECONDS
        try:
            self.turnstile.acquire(timeout=WAIT_SECONDS, max_poll=0.02)
            try:
                self.lock.acquire(shared=not write, timeout=max(deadline - _time.monotonic(), 0.0), max_poll=0.02)
            finally:
                self.turnstile.release()
        except LockTimeout as exc:
            raise LogError(f"the log {self.path} is busy: {exc.message}", hint=exc.hint) from None
        except OSError as exc:
            if exc.errno not in (errno.EROFS, errno.EACCES, errno.EPERM):
                raise
            if write:
                raise LogError(f"cannot write the log {self.path}: its folder is not writable ({exc.strerror})",
                               hint="make REAGENT_HOME writable, or point paths.log_path at a writable place") from None
            # a read-only folder: nobody can write this log, so a reader needs no lock
        delay = 0.01
        try:
            while True:
                try:
                    self.con = _connect(self.path, read_only=not write)
                    break
                except (duckdb.IOException, duckdb.ConnectionException) as exc:
                    # held by a program that ignores our lock (a DuckDB shell on the file)
                    if not _is_lock_error(exc):
                        raise LogError(f"cannot open the log {self.path}: {exc}") from None
                    if _time.monotonic() > deadline:
                        raise LogError(f"the log {self.path} is held by another program ({exc})",
                                       hint="close the program that has it open") from None
                    _time.sleep(delay)
                    delay = min(delay * 2, 0.5)
            if write:
                self.con.execute(f"SET checkpoint_threshold = '{WAL_CHECKPOINT_THRESHOLD}'")
            self.opened_at = _time.monotonic()
        except BaseException:
            self.con = None
            self.lock.release()
            raise
        self.writable = write

    def _schedule(self, delay: float) -> None:
        self._timer = threading.Timer(delay, self._release_if_idle)
        self._timer.daemon = True
        self._timer.start()

    def _release_if_idle(self) -> None:
        with self.mutex:
            self._timer = None
            if self.con is None:
                return
            idle = _time.monotonic() - self.last_used
            if idle < HOLD_SECONDS:
                self._schedule(HOLD_SECONDS - idle)
            else:
                self.release()

    def detach(self) -> None:
        """One EventLog stopped using the file; the last one also closes the lock files."""
        with self.mutex:
            self.users = max(self.users - 1, 0)
            self.release()
            if self.users == 0:
                self.lock.close()
                self.turnstile.close()

    def release(self) -> None:
        """Close the connection (DuckDB checkpoints a writer's WAL into the file) and free the lock."""
        with self.mutex:
            if self.con is not None:
                try:
                    self.con.close()
                finally:
                    self.con = None
                    self.lock.release()


def _forget_in_child() -> None:
    # a forked child must not touch its parent's connections or flocks (an unlock on an
    # inherited descriptor would free the parent's lock): it starts with none
    global _SHARED_FILES_GUARD
    _SHARED_FILES.clear()
    _SHARED_FILES_GUARD = threading.Lock()


os.register_at_fork(after_in_child=_forget_in_child)


@atexit.register
def _release_all() -> None:
    for shared in list(_SHARED_FILES.values()):
        try:
            shared.release()
        except Exception:  # noqa: BLE001 - best effort at exit; every append was already committed
            pass


# DuckDB's errors for a file it cannot read back (truncated, overwritten): not programming errors
_DAMAGE = (duckdb.IOException, duckdb.SerializationException, duckdb.InternalException, duckdb.FatalException)


class _PrivateDatabase:
    """An in-memory database for tests and throwaway runs: one connection for its life."""

    def __init__(self) -> None:
        self.mutex = threading.RLock()
        self.con: duckdb.DuckDBPyConnection | None = duckdb.connect(":memory:")

    @contextmanager
    def session(self, write: bool) -> Iterator[duckdb.DuckDBPyConnection]:
        with self.mutex:
            yield self.con

    def release(self) -> None:
        with self.mutex:
            if self.con is not None:
                self.con.close()
                self.con = None


class EventLog:
    """Append-only store of runs and their events; see the module docstring for concurrency."""

    def __init__(self, path: str | Path, read_only: bool = False) -> None:
        """Open (creating and migrating when writing) the log at ``path``; ``":memory:"`` for a private one."""
        self.path = Path(path).expanduser()
        self.read_only = read_only
        self.in_memory = str(path) == ":memory:"
        self._closed = False
        self._heartbeats: dict[str, float] = {}  # run id -> when this object last refreshed its heartbeat
        if self.in_memory:
            if read_only:
                raise LogError("an in-memory log cannot be opened read-only", hint="give a file path")
            self._file: _SharedFile | _PrivateDatabase = _PrivateDatabase()
        else:
            self._file = _SharedFile.of(self.path)
            with self._file.mutex:
                self._file.users += 1
        try:
            self.schema_version = self._check_schema()
        except BaseException:
            self.close()
            raise

    @contextmanager
    def _session(self, write: bool = False) -> Iterator[duckdb.DuckDBPyConnection]:
        if self._closed:
            raise LogError(f"the log {self.path} is closed", hint="open a new EventLog")
        try:
            with self._file.session(write and not self.read_only) as con:
                yield con
        except (duckdb.Error, OSError) as exc:
            if is_disk_full(exc):
                self._file.release()  # a connection whose write failed is not reused
                raise LogError(f"the disk holding the log {self.path} is full; the last event was not written",
                               hint="free some space, then ask again (or rerun with --resume); "
                                    "every event written before is intact") from None
            if isinstance(exc, _DAMAGE):
                self._file.release()
                raise LogError(f"the log {self.path} is damaged ({str(exc).splitlines()[0]})",
                               hint=f"move it aside (mv {self.path} {self.path}.damaged); the next ask starts "
                                    "a new log") from None
            raise

    def _check_schema(self) -> int:
        latest = len(MIGRATIONS)
        if self.read_only and _never_written(self.path):
            self._read_as_empty()
            return latest
        with self._session(write=not self.read_only) as con:
            has_table = con.execute(
                "SELECT count(*) FROM information_schema.tables WHERE table_name = 'schema_version'").fetchone()[0]
            version = 0
            if has_table:
                version = con.execute("SELECT max(version) FROM schema_version").fetchone()[0] or 0
            if version > latest:
                raise LogError(f"the log {self.path} has schema version {version}, newer than this reagent ({latest})",
                               hint="upgrade reagent-local, or use another log path")
            if version < latest and not self.read_only:
                self._migrate(version)
        if version < latest and self.read_only:
            if version > 0:
                raise LogError(f"the log {self.path} has schema version {version}; this reagent needs {latest}",
                               hint="open it once for writing (any `reagent ask`) to migrate it")
            self._read_as_empty()
        return latest

    def _read_as_empty(self) -> None:
        """Read a log that never got its tables as one with no runs (the file is left untouched).

        Version 0 (or a file of 0 bytes) means no migration ever committed, so the file holds
        nothing: its creation was cut off (a process killed while opening it) or another
        program made an empty database there. A reader sees no runs; the next writer creates the tables.
        """
        self._let_go_of_file()
        self._file = _PrivateDatabase()
        self._migrate(0)

    def _migrate(self, version: int) -> None:
        """Apply the migrations after ``version`` in one transaction: a kill leaves all of them or none."""
        with self._transaction() as tx:
            tx.execute("CREATE TABLE IF NOT EXISTS schema_version "
                       "(version INTEGER PRIMARY KEY, description VARCHAR, applied_at DOUBLE)")
            for number, (description, statements) in enumerate(MIGRATIONS[version:], start=version + 1):
                for sql in statements:
                    tx.execute(sql)
                tx.execute("INSERT INTO schema_version (version, description, applied_at) VALUES (?, ?, ?)",
                           [number, description, _time.time()])

    @contextmanager
    def _transaction(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """BEGIN ... COMMIT on the writer's connection; ROLLBACK (SQL, not a logical rollback) on error."""
        with self._session(write=True) as con:
            con.execute("BEGIN TRANSACTION")
            try:
                yield con
            except BaseException:
                con.execute("ROLLBACK")
                raise
            con.execute("COMMIT")

    def _query(self, sql: str, args: Sequence[Any] = (), write: bool = False) -> list[tuple]:
        """Run one statement (its own committed transaction) and fetch its rows."""
        with self._session(write) as con:
            return con.execute(sql, list(args)).fetchall()

    def _writable(self) -> None:
        if self.read_only:
            raise LogError(f"the log {self.path} was opened read-only",
                           hint="open EventLog(path) without read_only to write")

    # -- writing -------------------------------------------------------------
    def start_run(self, question: str, config: Mapping[str, Any], run_id: str | None = None) -> str:
        """Create a run (status 'running', with this process and a heartbeat) and return its id."""
        self._writable()
        run_id = run_id or _time.strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6]
        me, now = liveness.this_process(), _time.time()
        with self._transaction() as con:
            if con.execute("SELECT count(*) FROM runs WHERE run_id = ?", [run_id]).fetchone()[0]:
                raise LogError(f"run {run_id} already exists in {self.path}", hint="omit run_id to get a fresh one")
            self._mark_interrupted(con, now)
            con.execute("INSERT INTO runs (run_id, question, config, status, started_at, pid, host, proc_start, "
                        "heartbeat_at) VALUES (?, ?, ?, 'running', ?, ?, ?, ?, ?)",
                        [run_id, question, json.dumps(dict(config), default=str), now, me["pid"], me["host"],
                         me["proc_start"], now])
        self._heartbeats[run_id] = now
        return run_id

    @staticmethod
    def _mark_interrupted(con: duckdb.DuckDBPyConnection, now: float) -> None:
        """Close, as 'interrupted', the runs whose process is gone (killed, crashed) without closing them."""
        rows = con.execute("SELECT run_id, pid, host, proc_start, heartbeat_at FROM runs "
                           "WHERE status = 'running'").fetchall()
        for run_id, pid, host, proc_start, heartbeat in rows:
            if liveness.is_gone(pid, host, proc_start, heartbeat, now):
                con.execute("UPDATE runs SET status = 'interrupted', finished_at = ?, "
                            "error = 'its process ended before the run finished' WHERE run_id = ?",
                            [heartbeat, run_id])

    def append(self, run_id: str, type: str, *, agent: str, payload: Mapping[str, Any], time: int,
               parent_seq: int | None = None) -> Event:
        """Append one event and commit it; returns it with its sequence number."""
        self._writable()
        wall, body = _time.time(), json.dumps(payload, ensure_ascii=False)
        with self._session(write=True) as con:
            seq = con.execute(_INSERT_EVENT, [run_id, time, wall, agent, type, body, parent_seq]).fetchone()[0]
            if wall - self._heartbeats.get(run_id, 0.0) > HEARTBEAT_SECONDS:
                con.execute("UPDATE runs SET heartbeat_at = ? WHERE run_id = ?", [wall, run_id])
                self._heartbeats[run_id] = wall
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
             completion_tokens, seconds, _time.time()], write=True)[0][0]

    def finish_run(self, run_id: str, answer: str | None, status: str, stats: Mapping[str, Any], *,
                   uncertain: bool = False, payload: Mapping[str, Any] | None = None,
                   error: str | None = None) -> None:
        """Close a run: its status, stats and error (if it failed), and its answer row."""
        self._writable()
        self.get_run(run_id)
        with self._transaction() as con:
            con.execute("UPDATE runs SET status = ?, finished_at = ?, stats = ?, error = ? WHERE run_id = ?",
                        [status, _time.time(), json.dumps(dict(stats), default=str), error, run_id])
            con.execute("INSERT OR REPLACE INTO answers (run_id, answer, uncertain, payload) VALUES (?, ?, ?, ?)",
                        [run_id, answer, uncertain, json.dumps(dict(payload or {}), default=str)])
        self._heartbeats.pop(run_id, None)

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
            "a.uncertain, a.payload, (SELECT count(*) FROM events e WHERE e.run_id = r.run_id), "
            "r.pid, r.host, r.proc_start, r.heartbeat_at, r.error, "
            "(SELECT e.agent || ' ' || e.type FROM events e WHERE e.run_id = r.run_id ORDER BY e.seq DESC LIMIT 1) "
            "FROM runs r LEFT JOIN answers a USING (run_id) " + tail, args)
        out, now = [dict(zip(_RUN_KEYS, r)) for r in rows], _time.time()
        for row in out:
            for key in ("config", "stats", "answer_payload"):
                row[key] = json.loads(row[key]) if row[key] is not None else None
            # a run whose process is gone is interrupted, whether or not a writer has marked it yet
            if row["status"] == "running" and liveness.is_gone(row["pid"], row["host"], row["proc_start"],
                                                               row["heartbeat_at"], now):
                row["status"] = "interrupted"
                row["error"] = "its process ended before the run finished"
                row["finished_at"] = row["finished_at"] or row["heartbeat_at"]
        return out

    # -- closing -------------------------------------------------------------
    def close(self) -> None:
        """Stop using the log; the file is complete on disk when close returns (a writer checkpoints)."""
        if not self._closed:
            self._let_go_of_file()
        self._closed = True

    def _let_go_of_file(self) -> None:
        if isinstance(self._file, _PrivateDatabase):
            self._file.release()
        else:
            self._file.detach()

    def __enter__(self) -> "EventLog":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
