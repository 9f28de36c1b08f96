"""Build kg.duckdb from a MediaWiki dump: stream articles, extract infobox triples, index them."""

from __future__ import annotations

import json
import os
import re
import tempfile
import time
from collections import Counter
from pathlib import Path

import duckdb

from ..errors import IndexBuildError
from .wikidump import RawPage, iter_pages
from ..text import fold
from ..kg.infobox import Extractor
from ..kg.values import canonical_title
from ..kg.store import INDEXES, KG_FILENAME, SCHEMA, SCHEMA_VERSION, TRIPLE_COLUMNS
from ..kg.triples import Triple

# Relations whose values are other names of the subject (found by find_entities).
NAME_RELATIONS = ("name", "common_name", "conventional_long_name", "fullname")
_PARENTHETICAL = re.compile(r"\s*\([^()]*\)$")


def _aliases(subject: str, triples: list[Triple]) -> list[tuple[str, str, str]]:
    """(name_key, subject, kind) rows: the title, the title without "(book)", infobox names."""
    rows = {(fold(subject), "title")}
    short = _PARENTHETICAL.sub("", subject)
    if short != subject:
        rows.add((fold(short), "alias"))
    for t in triples:
        if t.relation in NAME_RELATIONS and len(t.value) <= 120:
            rows.add((fold(t.value), "name"))
    return [(key, subject, kind) for key, kind in sorted(rows) if key]


# One page's contribution: (is an article, triple rows without "ord", entity rows).
PageRows = tuple[bool, list[dict], list[dict]]


def page_rows(extractor: Extractor, page: RawPage) -> PageRows:
    """What one page adds to the graph; a redirect adds a name of its target, other namespaces nothing."""
    if page.namespace == 0 and page.redirect:
        target = canonical_title(page.redirect)
        if fold(page.title) and target:
            return False, [], [{"name_key": fold(page.title), "subject": target, "kind": "redirect"}]
        return False, [], []
    if not page.is_article:
        return False, [], []
    triples = extractor.page_triples(page.title, page.wikitext)
    if not triples:
        return True, [], []
    rows = []
    for t in triples:
        row = dict(zip(TRIPLE_COLUMNS, (getattr(t, c) for c in TRIPLE_COLUMNS)))
        row.update(subject_key=fold(t.subject), value_key=fold(t.value), display_key=fold(t.display) if t.display else None)
        rows.append(row)
    entities = [{"name_key": name_key, "subject": subject, "kind": kind}
                for name_key, subject, kind in _aliases(page.title, triples)]
    return True, rows, entities


def extractor_counts(extractor: Extractor) -> tuple[int, int, Counter[str]]:
    """What an extractor left out so far: values with markup, unresolved capitals, dropped templates."""
    return extractor.dropped_values, extractor.unresolved_capital, Counter(extractor.dropped_templates)


class KGBuilder:
    """Streaming writer: feed it articles (while reading a dump for passages, say), then finish().

    Rows go to temporary JSONL files in a hidden folder inside out_dir and are loaded
    into DuckDB in one pass at the end; kg.duckdb appears only when complete, and
    :meth:`abort` (or an exception inside ``with``) leaves nothing behind.
    """

    def __init__(self, out_dir: Path, *, source: Path | str = "") -> None:
        self.out_dir = Path(out_dir)
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self.source = str(source)
        self.extractor = Extractor()
        self.by_relation: Counter[str] = Counter()
        self.articles = self.subjects = self.triples = 0
        self._started = time.perf_counter()
        self._tmp = tempfile.TemporaryDirectory(dir=self.out_dir, prefix=".kg-build-")
        tmp = Path(self._tmp.name)
        self._triples_path, self._entities_path = tmp / "triples.jsonl", tmp / "entities.jsonl"
        self._tf = open(self._triples_path, "w", encoding="utf-8")
        self._ef = open(self._entities_path, "w", encoding="utf-8")

    def __enter__(self) -> "KGBuilder":
        return self

    def __exit__(self, exc_type: object, *exc: object) -> None:
        if exc_type is not None:
            self.abort()

    def add(self, page: RawPage) -> int:
        """Extract one page's triples; returns how many were added.

        A redirect in the main namespace adds its title as another name of its target
        ("Abe Lincoln" -> "Abraham Lincoln"); other namespaces are ignored.
        """
        return self.add_rows(page_rows(self.extractor, page))

    def add_rows(self, rows: PageRows) -> int:
        """Add what ``page_rows`` extracted from one page (here or in another process); returns the triples."""
        article, triples, entities = rows
        self.articles += article
        self.subjects += bool(triples)
        for row in triples:
            self._tf.write(json.dumps({**row, "ord": self.triples}, ensure_ascii=False) + "\n")
            self.triples += 1
            self.by_relation[row["relation"]] += 1
        for entity in entities:
            self._ef.write(json.dumps(entity, ensure_ascii=False) + "\n")
        return len(triples)

    def count_dropped(self, values: int, capital: int, templates: Counter[str]) -> None:
        """Add what another process's extractor left out (``extractor_counts``) to this build's stats."""
        self.extractor.dropped_values += values
        self.extractor.unresolved_capital += capital
        self.extractor.dropped_templates.update(templates)

    def stats(self) -> dict:
        """Counts so far: triples, subjects, articles, by_relation, and what extraction left out."""
        return {
            "triples": self.triples,
            "subjects": self.subjects,
            "articles": self.articles,
            "by_relation": dict(self.by_relation.most_common()),
            "dropped_values": self.extractor.dropped_values,
            "unresolved_capital": self.extractor.unresolved_capital,
            "dropped_templates": dict(self.extractor.dropped_templates.most_common(20)),
            "seconds": round(time.perf_counter() - self._started, 2),
        }

    def finish(self) -> dict:
        """Write out_dir/kg.duckdb with its indexes and return stats()."""
        self._tf.close()
        self._ef.close()
        stats = self.stats()
        final = self.out_dir / KG_FILENAME
        partial = Path(self._tmp.name) / KG_FILENAME
        try:
            _write_database(partial, self._triples_path, self._entities_path, self.source, stats)
            os.replace(partial, final)
        except duckdb.Error as exc:
            raise IndexBuildError(f"writing {final} failed: {exc}", hint="check free disk space and retry") from None
        finally:
            self._tmp.cleanup()
        stats["seconds"] = round(time.perf_counter() - self._started, 2)
        return stats

    def abort(self) -> None:
        """Drop everything written so far."""
        self._tf.close()
        self._ef.close()
        self._tmp.cleanup()


def build_kg(source: Path, out_dir: Path, *, limit: int | None = None) -> dict:
    """Extract infobox triples from the dump's articles into out_dir/kg.duckdb; return counts.

    ``limit`` keeps the first N articles (redirects and other namespaces do not count),
    as the passage index builder does.
    """
    with KGBuilder(out_dir, source=source) as builder:
        for page in iter_pages(Path(source)):
            if page.is_article and limit is not None and builder.articles >= limit:
                break
            builder.add(page)  # redirects add names, other namespaces nothing
        return builder.finish()


def _write_database(path: Path, triples_path: Path, entities_path: Path, source: str, stats: dict) -> None:
    con = duckdb.connect(str(path))
    try:
        con.execute(SCHEMA)
        if stats["triples"]:
            con.execute(
                "INSERT INTO triples SELECT * FROM read_json(?, format='newline_delimited', columns={"
                "subject:'VARCHAR', relation:'VARCHAR', value:'VARCHAR', value_number:'DOUBLE', unit:'VARCHAR',"
                "value_date:'VARCHAR', raw_key:'VARCHAR', passage_id:'VARCHAR', display:'VARCHAR', ord:'BIGINT',"
                "subject_key:'VARCHAR', value_key:'VARCHAR', display_key:'VARCHAR'})",
                [str(triples_path)],
            )
            # redirects to pages without triples are not entities of the graph
            con.execute(
                "INSERT INTO entities SELECT DISTINCT * FROM read_json(?, format='newline_delimited', "
                "columns={name_key:'VARCHAR', subject:'VARCHAR', kind:'VARCHAR'}) "
                "WHERE subject IN (SELECT DISTINCT subject FROM triples)",
                [str(entities_path)],
            )
        con.execute(INDEXES)
        meta = {
            "schema_version": str(SCHEMA_VERSION),
            "source": source,
            "built_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            **{k: json.dumps(v) if isinstance(v, dict) else str(v) for k, v in stats.items()},
        }
        con.executemany("INSERT INTO meta VALUES (?, ?)", list(meta.items()))
    finally:
        con.close()
