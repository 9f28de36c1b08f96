"""The passage table of an index, in DuckDB (``passages.duckdb``).

Why DuckDB rather than Parquet: searches fetch a handful of passages by row number
or by id, and DuckDB answers those point lookups from disk in about a millisecond
(zone maps on ``row``, an ART index on ``id``) without loading the table into
memory, which a 20-million-passage Wikipedia index needs. It assigns the passage
ids out of core in SQL, is one self-describing file that anyone can open with the
``duckdb`` CLI, and is already the project's event-log engine (no new dependency).

Table ``passages(row BIGINT, id VARCHAR, title VARCHAR, text VARCHAR)``: ``row`` is
the position of the passage's vector in the FAISS and BM25 indexes.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Iterator, Sequence

import duckdb

from .passages import Passage

FILENAME = "passages.duckdb"


class PassageWriter:
    """Appends (title, text) passages in order, then assigns ids ``title#n`` in one pass."""

    def __init__(self, path: Path, batch_size: int = 10_000) -> None:
        self.path = Path(path)
        if self.path.exists():
            self.path.unlink()  # a partial table from an interrupted run: start it again
        self._con = duckdb.connect(str(self.path))
        self._con.execute("CREATE TABLE raw(row BIGINT, title VARCHAR, text VARCHAR)")
        self._batch: tuple[list[int], list[str], list[str]] = ([], [], [])
        self._batch_size = batch_size
        self.count = 0

    def add(self, title: str, text: str) -> None:
        """Queue one passage; it gets the next row number."""
        rows, titles, texts = self._batch
        rows.append(self.count)
        titles.append(title)
        texts.append(text)
        self.count += 1
        if len(rows) >= self._batch_size:
            self._flush()

    def _flush(self) -> None:
        rows, titles, texts = self._batch
        if rows:
            self._con.execute("INSERT INTO raw SELECT unnest(?), unnest(?), unnest(?)", [rows, titles, texts])
            self._batch = ([], [], [])

    def finish(self) -> int:
        """Write the final table with ids (n counts passages under one title, in order); return the count."""
        self._flush()
        self._con.execute(
            "CREATE TABLE passages AS SELECT row,"
            " title || '#' || CAST(row_number() OVER (PARTITION BY title ORDER BY row) - 1 AS VARCHAR) AS id,"
            " title, text FROM raw ORDER BY row"
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
            "SELECT row, id, title, text FROM passages WHERE row IN (SELECT unnest(?))", [list(map(int, rows))]
        ).fetchall()
        return {row: Passage(pid, title, text) for row, pid, title, text in found}

    def by_id(self, passage_id: str) -> Passage | None:
        """The passage with this id, or None."""
        found = self._cursor().execute("SELECT id, title, text FROM passages WHERE id = ?", [passage_id]).fetchone()
        return Passage(*found) if found else None

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
