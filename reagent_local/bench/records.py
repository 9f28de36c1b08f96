"""The run folder's per-question records: one JSON line each, appended and fsynced as it finishes.

A run killed at any moment leaves complete lines plus, at worst, one partly written
last line. ``RecordStore`` drops that torn line (truncating the file to the last
newline) before appending, so a resumed run redoes that one question and never
duplicates one. A malformed line anywhere else is corruption and raises.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Iterable

from ..errors import BenchRunError
from ..paths import is_disk_full

RECORDS_FILE = "records.jsonl"
Key = tuple[str, str]  # (method, question id)


def _parse(path: Path, data: bytes) -> tuple[list[dict[str, Any]], int]:
    """Complete records and the byte length they occupy (everything after it is a torn line)."""
    end = data.rfind(b"\n") + 1  # 0 when there is no complete line
    records = []
    for lineno, line in enumerate(data[:end].split(b"\n")[:-1], 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise BenchRunError(
                f"{path}, line {lineno}, is not a JSON record",
                hint="the file was edited or corrupted: delete that line, then resume to redo it",
            ) from None
        if not isinstance(record, dict) or "method" not in record or "id" not in record:
            raise BenchRunError(f"{path}, line {lineno}, lacks the method or id field", hint="delete that line and resume")
        records.append(record)
    return records, end


def read_records(path: Path) -> list[dict[str, Any]]:
    """The complete records of a records file (a torn last line is ignored); [] if absent."""
    path = Path(path)
    if not path.exists():
        return []
    records, _ = _parse(path, path.read_bytes())
    return records


def record_key(record: dict[str, Any]) -> Key:
    """The (method, question id) pair a record answers."""
    return str(record["method"]), str(record["id"])


def check_unique(records: Iterable[dict[str, Any]], path: Path) -> None:
    """Raise when a (method, question id) pair occurs twice."""
    seen: set[Key] = set()
    for record in records:
        key = record_key(record)
        if key in seen:
            raise BenchRunError(
                f"{path} holds two records for method {key[0]!r} and question {key[1]!r}",
                hint="the folder mixes two runs: keep one of the two lines",
            )
        seen.add(key)


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class RecordStore:
    """Appends records durably to ``records.jsonl``; opened with the torn tail removed.

    ``stamp`` is added to every record appended (the session's ``config_id``).
    """

    def __init__(self, path: Path, stamp: dict[str, Any] | None = None) -> None:
        self.path = Path(path)
        self.stamp = dict(stamp or {})
        data = self.path.read_bytes() if self.path.exists() else b""
        self.records, end = _parse(self.path, data)
        check_unique(self.records, self.path)
        self.dropped_torn_line = end < len(data)
        created = not self.path.exists()
        # O_APPEND: every write lands at the end, whatever another descriptor did
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        if self.dropped_torn_line:
            os.ftruncate(self._fd, end)
            os.fsync(self._fd)
        if created:
            _fsync_dir(self.path.parent)  # the file's name is durable too, not only its bytes
        self.done: set[Key] = {record_key(r) for r in self.records}

    def append(self, record: dict[str, Any]) -> None:
        """Write one record as one complete line in one write, and fsync it before returning."""
        key = record_key(record)
        if key in self.done:
            raise BenchRunError(f"record for {key} already written", hint="this is a bug in the runner")
        record = {**record, **self.stamp}
        line = (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
        before = os.fstat(self._fd).st_size
        try:
            written = os.write(self._fd, line)
            while written < len(line):  # a short write (rare: a signal, a full disk) continues where it stopped
                written += os.write(self._fd, line[written:])
            os.fsync(self._fd)
        except OSError as exc:
            os.ftruncate(self._fd, before)  # no torn line left behind by this process
            if is_disk_full(exc):
                raise BenchRunError(f"disk full while writing {self.path}",
                                    hint="free some space, then run again with --resume") from None
            raise
        self.records.append(record)
        self.done.add(key)

    def close(self) -> None:
        """Close the file."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> "RecordStore":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
