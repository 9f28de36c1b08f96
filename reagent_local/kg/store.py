"""The knowledge graph on disk: one DuckDB file of triples, opened read-only at query time."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import duckdb

from ..errors import IndexMismatchError
from ..text import fold
from .search import question_ngrams, rank_triples
from .triples import Triple

KG_FILENAME = "kg.duckdb"
SCHEMA_VERSION = 1
_KIND_ORDER = {"title": 0, "redirect": 1, "alias": 2, "name": 3}
REVERSE_LIMIT = 500  # triples found by value per question; a common value ("English") is capped

# Column order of the triples table; Triple's fields (kg/triples.py) follow it.
TRIPLE_COLUMNS = ("subject", "relation", "value", "value_number", "unit", "value_date",
                  "raw_key", "passage_id", "display")

SCHEMA = """
CREATE TABLE meta (key VARCHAR PRIMARY KEY, value VARCHAR);
CREATE TABLE triples (
    subject VARCHAR NOT NULL, relation VARCHAR NOT NULL, value VARCHAR NOT NULL,
    value_number DOUBLE, unit VARCHAR, value_date VARCHAR, raw_key VARCHAR NOT NULL,
    passage_id VARCHAR NOT NULL, display VARCHAR, ord BIGINT NOT NULL,
    subject_key VARCHAR NOT NULL, value_key VARCHAR NOT NULL, display_key VARCHAR
);
CREATE TABLE entities (name_key VARCHAR NOT NULL, subject VARCHAR NOT NULL, kind VARCHAR NOT NULL);
"""
INDEXES = """
CREATE INDEX triples_subject ON triples (subject);
CREATE INDEX triples_value ON triples (value);
CREATE INDEX triples_value_key ON triples (value_key);
CREATE INDEX triples_display_key ON triples (display_key);
CREATE INDEX entities_name_key ON entities (name_key);
"""


class KnowledgeGraph:
    """Read-only access to an index folder's kg.duckdb."""

    def __init__(self, path: Path, connection: duckdb.DuckDBPyConnection) -> None:
        self.path = path
        self._con = connection

    @classmethod
    def open(cls, index_dir: Path) -> "KnowledgeGraph | None":
        """Open index_dir/kg.duckdb read-only; None when the index has no knowledge graph."""
        path = Path(index_dir) / KG_FILENAME
        if not path.is_file():
            return None
        try:
            con = duckdb.connect(str(path), read_only=True)
            row = con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        except duckdb.Error as exc:
            raise IndexMismatchError(
                f"{path} is not a readable knowledge graph ({exc})",
                hint=f"rebuild the index with `reagent index build`, or delete {path}",
            ) from None
        if row is None or int(row[0]) != SCHEMA_VERSION:
            con.close()
            raise IndexMismatchError(
                f"{path} has knowledge-graph schema {row[0] if row else 'unknown'}, this version reads {SCHEMA_VERSION}",
                hint="rebuild the index with `reagent index build`",
            )
        return cls(path, con)

    def close(self) -> None:
        """Release the DuckDB connection."""
        self._con.close()

    def __enter__(self) -> "KnowledgeGraph":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _query(self, sql: str, params: list | None = None) -> list[tuple]:
        # One cursor per query: a DuckDB connection must not be shared across threads,
        # and the retriever may search passages and triples in parallel.
        cursor = self._con.cursor()
        try:
            return cursor.execute(sql, params or []).fetchall()
        finally:
            cursor.close()

    def _rows(self, where: str, params: list, limit: int | None = None) -> list[Triple]:
        columns = ", ".join(TRIPLE_COLUMNS)
        sql = f"SELECT {columns} FROM triples WHERE {where} ORDER BY ord"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        rows = self._query(sql, params)
        return [Triple(*row) for row in rows]

    def triples(self, subject: str, relation: str | None = None) -> list[Triple]:
        """The subject's triples (exact title), optionally of one relation, in infobox order."""
        if relation is None:
            return self._rows("subject = ?", [subject])
        return self._rows("subject = ? AND relation = ?", [subject, relation])

    def with_value(self, value: str, relation: str | None = None) -> list[Triple]:
        """Triples whose value is the given title or text (case- and accent-insensitive)."""
        if relation is None:
            return self._rows("value_key = ?", [fold(value)])
        return self._rows("value_key = ? AND relation = ?", [fold(value), relation])

    def find_entities(self, text: str) -> list[str]:
        """Subjects whose title (or infobox name) appears in the text, longest matches first.

        Matching ignores case, accents and punctuation; a title found inside a longer
        match is not returned on its own ("Abraham Lincoln" hides "Lincoln").
        """
        spans = question_ngrams(text)
        if not spans:
            return []
        keys = sorted({key for key, _ in spans})
        rows = self._query("SELECT name_key, subject, kind FROM entities WHERE name_key IN (SELECT unnest(?))", [keys])
        found: dict[str, list[tuple[str, str]]] = {}
        for name_key, subject, kind in rows:
            found.setdefault(name_key, []).append((kind, subject))
        taken: list[tuple[int, int]] = []
        result: list[str] = []
        for key, (start, end) in sorted(spans, key=lambda s: (-(s[1][1] - s[1][0]), s[1][0])):
            if key not in found or any(start < e and s < end for s, e in taken):
                continue
            taken.append((start, end))
            # exact titles, then redirects, then other names (title without "(book)", infobox name)
            for _, subject in sorted(found[key], key=lambda ks: (_KIND_ORDER.get(ks[0], 9), ks[1])):
                if subject not in result:
                    result.append(subject)
        return result

    def search(self, question: str, k: int = 10) -> list[Triple]:
        """Triples of the question's entities, most relevant relations first.

        Triples whose *value* is named in the question ("Which film starred Núria
        Espert?") are added when the question asks for their relation.
        """
        entities = self.find_entities(question)
        forward = [t for subject in entities for t in self.triples(subject)]
        keys = sorted({key for key, _ in question_ngrams(question)})
        reverse = []
        if keys:
            reverse = self._rows(
                "(value_key IN (SELECT unnest(?)) OR display_key IN (SELECT unnest(?)))"
                " AND subject NOT IN (SELECT unnest(?))",
                [keys, keys, entities or [""]],
                limit=REVERSE_LIMIT,
            )
        return rank_triples(question, forward, entities, reverse=reverse)[:k]

    def iter_all(self, batch: int = 10_000) -> Iterator[Triple]:
        """Every triple in build order, fetched in batches (for inspection and tests)."""
        columns = ", ".join(TRIPLE_COLUMNS)
        cursor = self._con.cursor()
        cursor.execute(f"SELECT {columns} FROM triples ORDER BY ord")
        while rows := cursor.fetchmany(batch):
            yield from (Triple(*row) for row in rows)

    def counts_by_relation(self) -> dict[str, int]:
        """Number of triples per relation, most frequent first."""
        rows = self._query("SELECT relation, count(*) AS n FROM triples GROUP BY relation ORDER BY n DESC, relation")
        return {relation: n for relation, n in rows}

    def stats(self) -> dict[str, str]:
        """What the build recorded (source, counts, seconds) as strings."""
        return dict(self._query("SELECT key, value FROM meta ORDER BY key"))
