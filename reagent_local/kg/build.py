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
from ..retrieval.wikidump import iter_pages
from .infobox import Extractor
from .search import fold
from .store import INDEXES, KG_FILENAME, SCHEMA, SCHEMA_VERSION, TRIPLE_COLUMNS, Triple

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


def build_kg(source: Path, out_dir: Path, *, limit: int | None = None) -> dict:
    """Extract infobox triples from the dump's articles into out_dir/kg.duckdb; return counts.

    ``limit`` keeps the first N articles (redirects and other namespaces do not count),
    as the passage index builder does. The file is written under a temporary name and
    moved into place only when complete.
    """
    source, out_dir = Path(source), Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    final = out_dir / KG_FILENAME
    started = time.perf_counter()
    extractor = Extractor()
    by_relation: Counter[str] = Counter()
    subjects = articles = n_triples = 0
    with tempfile.TemporaryDirectory(dir=out_dir, prefix=".kg-build-") as tmp:
        triples_path, entities_path = Path(tmp) / "triples.jsonl", Path(tmp) / "entities.jsonl"
        with open(triples_path, "w", encoding="utf-8") as tf, open(entities_path, "w", encoding="utf-8") as ef:
            for page in iter_pages(source):
                if not page.is_article:
                    continue
                if limit is not None and articles >= limit:
                    break
                articles += 1
                triples = extractor.page_triples(page.title, page.wikitext)
                if not triples:
                    continue
                subjects += 1
                for t in triples:
                    row = dict(zip(TRIPLE_COLUMNS, (getattr(t, c) for c in TRIPLE_COLUMNS)))
                    row.update(ord=n_triples, subject_key=fold(t.subject), value_key=fold(t.value),
                               display_key=fold(t.display) if t.display else None)
                    tf.write(json.dumps(row, ensure_ascii=False) + "\n")
                    n_triples += 1
                    by_relation[t.relation] += 1
                for name_key, subject, kind in _aliases(page.title, triples):
                    ef.write(json.dumps({"name_key": name_key, "subject": subject, "kind": kind}, ensure_ascii=False) + "\n")
        seconds = time.perf_counter() - started
        stats = {
            "triples": n_triples,
            "subjects": subjects,
            "articles": articles,
            "by_relation": dict(by_relation.most_common()),
            "dropped_values": extractor.dropped_values,
            "unresolved_capital": extractor.unresolved_capital,
            "dropped_templates": dict(extractor.dropped_templates.most_common(20)),
            "seconds": round(seconds, 2),
        }
        partial = Path(tmp) / KG_FILENAME
        try:
            _write_database(partial, triples_path, entities_path, source, stats)
        except duckdb.Error as exc:
            raise IndexBuildError(f"writing {final} failed: {exc}", hint="check free disk space and retry") from None
        os.replace(partial, final)
    return stats


def _write_database(path: Path, triples_path: Path, entities_path: Path, source: Path, stats: dict) -> None:
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
            con.execute(
                "INSERT INTO entities SELECT DISTINCT * FROM read_json(?, format='newline_delimited', "
                "columns={name_key:'VARCHAR', subject:'VARCHAR', kind:'VARCHAR'})",
                [str(entities_path)],
            )
        con.execute(INDEXES)
        meta = {
            "schema_version": str(SCHEMA_VERSION),
            "source": str(source),
            "built_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            **{k: json.dumps(v) if isinstance(v, dict) else str(v) for k, v in stats.items()},
        }
        con.executemany("INSERT INTO meta VALUES (?, ?)", list(meta.items()))
    finally:
        con.close()
