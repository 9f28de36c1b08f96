"""The passage table of an index, in DuckDB (``passages.duckdb``).

Why DuckDB rather than Parquet: searches fetch a handful of passages by row number
or by id, and DuckDB answers those point lookups from disk in about a millisecond
(zone maps on ``row``, an ART index on ``id``) without loading the table into
memory, which a 20-million-passage Wikipedia index needs. It assigns the passage
ids out of core in SQL, is one self-describing file that anyone can open with the
``duckdb`` CLI, and is already the project's event-log engine (no new dependency).

Table ``passages(row BIGINT, id VARCHAR, title VARCHAR, text VARCHAR)``: ``row`` is
the position of the passage's vector in the FAISS and BM25 indexes. An index of a folder
of documents adds each passage's origin (``path``, ``heading`` VARCHAR[], ``page``,
``line_first``, ``line_last``; ids are ``path#n``) and a table ``files`` of the files read
(path, sha256, bytes, kind, title, first row, passages), which ``index update`` compares
with the folder.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Iterator, Sequence

import duckdb

from .passages import Origin
from .passages import Passage

FILENAME = "passages.duckdb"
ORIGIN_COLUMNS = ("path", "heading", "page", "line_first", "line_last")
FILE_COLUMNS = ("path", "sha256", "bytes", "kind", "title", "first_row", "passages")


class PassageWriter:
    """Appends (title, text) passages in order, then assigns ids ``title#n`` in one pass.

    With ``origins`` every passage carries its Origin and ids are ``path#n``; ``add_file``
    records the files read (the ``files`` table).
    """

    def __init__(self, path: Path, batch_size: int = 10_000, *, origins: bool = False) -> None:
        self.path = Path(path)
        if self.path.exists():
            self.path.unlink()  # a partial table from an interrupted run: start it again
        self._con = duckdb.connect(str(self.path))
        self.origins = origins
        extra = ", path VARCHAR, heading VARCHAR[], page INTEGER, line_first INTEGER, line_last INTEGER" if origins else ""
        self._con.execute(f"CREATE TABLE raw(row BIGINT, title VARCHAR, text VARCHAR{extra})")
        if origins:
            self._con.execute("CREATE TABLE files(path VARCHAR, sha256 VARCHAR, bytes BIGINT, kind VARCHAR, "
                              "title VARCHAR, first_row BIGINT, passages BIGINT)")
        self._batch: list[list[Any]] = [[] for _ in range(3 + (len(ORIGIN_COLUMNS) if origins else 0))]
        self._batch_size = batch_size
        self.count = 0

    def add(self, title: str, text: str, origin: Origin | None = None) -> None:
        """Queue one passage; it gets the next row number."""
        values: list[Any] = [self.count, title, text]
        if self.origins:
            if origin is None:
                raise ValueError("this passage table records origins: pass the passage's origin")
            lines = origin.lines or (None, None)
            values += [origin.path, list(origin.heading), origin.page, lines[0], lines[1]]
        for column, value in zip(self._batch, values):
            column.append(value)
        self.count += 1
        if len(self._batch[0]) >= self._batch_size:
            self._flush()

    def add_file(self, path: str, sha256: str, size: int, kind: str, title: str, first_row: int, passages: int) -> None:
        """Record one file read and the rows of its passages."""
        self._con.execute("INSERT INTO files VALUES (?, ?, ?, ?, ?, ?, ?)", [path, sha256, size, kind, title, first_row, passages])

    def _flush(self) -> None:
        if self._batch[0]:
            self._con.execute(f"INSERT INTO raw SELECT {', '.join(['unnest(?)'] * len(self._batch))}", self._batch)
            self._batch = [[] for _ in self._batch]

    def finish(self) -> int:
        """Write the final table with ids (n counts passages under one title, or one file, in order); return the count."""
        self._flush()
        key = "path" if self.origins else "title"
        extra = ", " + ", ".join(ORIGIN_COLUMNS) if self.origins else ""
        self._con.execute(
            "CREATE TABLE passages AS SELECT row,"
            f" {key} || '#' || CAST(row_number() OVER (PARTITION BY {key} ORDER BY row) - 1 AS VARCHAR) AS id,"
            f" title, text{extra} FROM raw ORDER BY row"
        )
        self._con.execute("DROP TABLE raw")
        self._con.execute("CREATE UNIQUE INDEX passages_id ON passages(id)")
        self._con.execute("CHECKPOINT")
        self._con.close()
        return self.count

    def abort(self) -> None:
        """Close without finishing (the caller removes the folder)."""
        try:
            self._con.close()
        except duckdb.Error:
            pass


class PassageStore:
    """Read-only access to a finished passage table; safe to share between threads."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._con = duckdb.connect(str(self.path), read_only=True)
        self._local = threading.local()
        columns = {row[0] for row in self._con.execute("DESCRIBE passages").fetchall()}
        self.has_origins = set(ORIGIN_COLUMNS) <= columns
        self._columns = "row, id, title, text" + (", " + ", ".join(ORIGIN_COLUMNS) if self.has_origins else "")

    def _cursor(self) -> duckdb.DuckDBPyConnection:
        cursor = getattr(self._local, "cursor", None)
        if cursor is None:
            cursor = self._local.cursor = self._con.cursor()
        return cursor

    def count(self) -> int:
        """Number of passages."""
        return int(self._cursor().execute("SELECT count(*) FROM passages").fetchone()[0])

    def by_rows(self, rows: Sequence[int]) -> dict[int, Passage]:
        """Passages at these row numbers (missing rows are absent from the result)."""
        if not rows:
            return {}
        found = self._cursor().execute(
            f"SELECT {self._columns} FROM passages WHERE row IN (SELECT unnest(?))", [list(map(int, rows))]
        ).fetchall()
        return {record[0]: _passage(record) for record in found}

    def by_id(self, passage_id: str) -> Passage | None:
        """The passage with this id, or None."""
        found = self._cursor().execute(f"SELECT {self._columns} FROM passages WHERE id = ?", [passage_id]).fetchone()
        return _passage(found) if found else None

    def passages(self, start: int, stop: int, batch: int = 10_000) -> Iterator[Passage]:
        """Whole passages (origins included) of rows start..stop-1, in row order."""
        for low in range(start, stop, batch):
            high = min(stop, low + batch)
            for record in self._cursor().execute(
                    f"SELECT {self._columns} FROM passages WHERE row >= ? AND row < ? ORDER BY row", [low, high]).fetchall():
                yield _passage(record)

    def files(self) -> list[dict[str, Any]]:
        """The files an index of a folder was read from, in path order ([] for other indexes)."""
        if not self.has_origins:
            return []
        found = self._cursor().execute(f"SELECT {', '.join(FILE_COLUMNS)} FROM files ORDER BY path").fetchall()
        return [dict(zip(FILE_COLUMNS, record)) for record in found]

    def iter_range(self, start: int, stop: int, batch: int = 10_000) -> Iterator[tuple[str, str]]:
        """(title, text) of rows start..stop-1, in row order."""
        for low in range(start, stop, batch):
            high = min(stop, low + batch)
            yield from self._cursor().execute(
                "SELECT title, text FROM passages WHERE row >= ? AND row < ? ORDER BY row", [low, high]
            ).fetchall()

    def close(self) -> None:
        """Release the database file."""
        self._con.close()


def _passage(record: Sequence[Any]) -> Passage:
    """A Passage from ``row, id, title, text`` and, when present, the origin columns."""
    _row, pid, title, text = record[:4]
    if len(record) == 4 or record[4] is None:
        return Passage(pid, title, text)
    path, heading, page, first, last = record[4:9]
    lines = (int(first), int(last)) if first is not None and last is not None else None
    return Passage(pid, title, text, Origin(path, tuple(heading or ()), page, lines))
