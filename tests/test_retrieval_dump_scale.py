"""The dump reader on multistream bz2 and on a large synthetic dump: every page, flat memory."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from reagent_local.retrieval.readers import read_documents
from reagent_local.retrieval.wikidump import iter_pages

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "bench_dump_stream.py"


@pytest.fixture(scope="module")
def script():
    spec = importlib.util.spec_from_file_location("bench_dump_stream", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("multistream", [True, False])
def test_every_page_of_a_repeated_dump_is_read_in_order(script, wiki_dump: Path, tmp_path: Path, multistream: bool) -> None:
    header, pages, footer = script.split_sample(wiki_dump)
    assert len(pages) == 206
    path = tmp_path / "dump.xml.bz2"
    written = script.write_dump(path, header, script.copies(pages[:60], 1), footer, multistream)
    assert written["pages"] == 60
    written = script.write_dump(path, header, script.copies(pages[:60], 3 * sum(map(len, pages[:60]))), footer,
                                multistream)
    assert written["pages"] == 180  # three copies, 100 pages a stream: the copies span stream boundaries
    titles = [page.title for page in iter_pages(path)]
    assert len(titles) == 180 and len(set(titles)) == 180
    assert titles[60].endswith("(copy 1)") and titles[179].endswith("(copy 2)")
    articles = [d.title for d in read_documents(path, "wikixml")]
    first = [a for a in articles if a.endswith("(copy 0)")]
    assert set(articles) <= set(titles) and len(articles) == len(set(articles)) == 3 * len(first) > 0


@pytest.mark.slow
def test_memory_and_rate_stay_flat_over_a_large_multistream_dump(script, wiki_dump: Path, tmp_path: Path) -> None:
    header, pages, footer = script.split_sample(wiki_dump)
    path = tmp_path / "big.xml.bz2"
    written = script.write_dump(path, header, script.copies(pages, 150_000_000), footer, multistream=True)
    result = script.stream_pages(path, window=1_000)
    assert result["pages"] == written["pages"] > 4_000
    flat = script.summarise(result)
    assert flat["rss_mb_last_tenth"] - flat["rss_mb_first_tenth"] < 16  # no growth with the file
    assert flat["cpu_rate_last_tenth"] > 0.6 * flat["cpu_rate_first_tenth"]  # no slowdown as it goes
