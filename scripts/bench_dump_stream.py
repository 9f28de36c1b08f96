"""The dump reader on a large synthetic dump: pages/s and resident memory, window by window.

    nice -n 19 .venv/bin/python scripts/bench_dump_stream.py --gb 3 --out bench-runs/dump-stream.json

The dump is the shared Wikipedia sample's pages repeated under distinct titles (and
page ids) until the XML reaches ``--gb`` GB, written twice: as one bz2 stream, and as
a multistream bz2 (Wikimedia's ``*-multistream.xml.bz2`` layout: the header, then 100
pages a stream, then the footer). ``wikidump.iter_pages`` streams each file whole;
every ``--window`` pages the rate and the process' resident memory are recorded, so a
reader whose memory grows with the file, or slows down as it goes, shows it. The full
reader (``read_documents``, wikitext stripped with mwparserfromhell, ~1 MB/s) is timed
on the first ``--strip-pages`` articles of the same file.
"""

from __future__ import annotations

import argparse
import bz2
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Iterator

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

SAMPLE = Path(__file__).resolve().parents[2] / "shared" / "data" / "wiki" / \
    "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"
PAGES_PER_STREAM = 100


def _rss_mb() -> tuple[float, float]:
    """(VmRSS, VmHWM) of this process in MB."""
    found = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            found[key] = int(value.split()[0]) / 1024
    return round(found["VmRSS"], 1), round(found["VmHWM"], 1)


def split_sample(sample: Path) -> tuple[bytes, list[bytes], bytes]:
    """The sample dump's header (up to the first page), its pages, and its footer, as raw XML."""
    with bz2.open(sample, "rb") as stream:
        xml = stream.read()
    first, last = xml.index(b"<page>"), xml.rindex(b"</page>") + len(b"</page>")
    pages = re.findall(rb"<page>.*?</page>", xml[first:last], flags=re.S)
    return xml[:first], pages, xml[last:]


def copies(pages: list[bytes], target_bytes: int) -> Iterator[bytes]:
    """The pages again and again, each copy's titles and ids made distinct, until ``target_bytes``."""
    written, copy = 0, 0
    while written < target_bytes:
        for page in pages:
            page = re.sub(rb"<title>(.*?)</title>", lambda m: b"<title>" + m.group(1) + b" (copy %d)</title>" % copy,
                          page, count=1)
            page = re.sub(rb"<id>(\d+)</id>", lambda m: b"<id>%d</id>" % (int(m.group(1)) + copy * 10_000_000), page,
                          count=1)
            written += len(page)
            yield page
        copy += 1


def write_dump(path: Path, header: bytes, pages: Iterator[bytes], footer: bytes, multistream: bool) -> dict:
    """Write the dump as one bz2 stream or as a multistream bz2; return its page count and sizes."""
    count, xml_bytes = 0, len(header) + len(footer)
    with open(path, "wb") as out:
        if multistream:
            out.write(bz2.compress(header))
            batch: list[bytes] = []
            for page in pages:
                batch.append(page)
                count += 1
                xml_bytes += len(page)
                if len(batch) == PAGES_PER_STREAM:
                    out.write(bz2.compress(b"".join(batch)))
                    batch = []
            if batch:
                out.write(bz2.compress(b"".join(batch)))
            out.write(bz2.compress(footer))
        else:
            compressor = bz2.BZ2Compressor()
            out.write(compressor.compress(header))
            for page in pages:
                out.write(compressor.compress(page))
                count += 1
                xml_bytes += len(page)
            out.write(compressor.compress(footer))
            out.write(compressor.flush())
    return {"pages": count, "xml_bytes": xml_bytes, "bz2_bytes": path.stat().st_size}


def stream_pages(path: Path, window: int) -> dict:
    """Iterate every page with ``iter_pages``; rate and memory every ``window`` pages."""
    from reagent_local.retrieval.wikidump import iter_pages

    windows, count, articles = [], 0, 0
    began = last = time.perf_counter()
    cpu_last = time.process_time()
    for page in iter_pages(path):
        count += 1
        articles += page.is_article
        if count % window == 0:
            now, cpu = time.perf_counter(), time.process_time()
            rss, hwm = _rss_mb()
            windows.append({"pages": count, "pages_per_second": round(window / (now - last), 1),
                            "pages_per_cpu_second": round(window / max(cpu - cpu_last, 1e-9), 1),
                            "rss_mb": rss, "peak_rss_mb": hwm})
            last, cpu_last = now, cpu
    return {"pages": count, "articles": articles, "seconds": round(time.perf_counter() - began, 1), "windows": windows}


def strip_pages(path: Path, limit: int) -> dict:
    """The full reader (wikitext stripped) over the first ``limit`` articles."""
    from reagent_local.retrieval.readers import read_documents

    began, cpu = time.perf_counter(), time.process_time()
    count = 0
    for _document in read_documents(path, "wikixml"):
        count += 1
        if count >= limit:
            break
    seconds, cpu_seconds = time.perf_counter() - began, time.process_time() - cpu
    return {"articles": count, "seconds": round(seconds, 1), "articles_per_second": round(count / seconds, 1),
            "articles_per_cpu_second": round(count / cpu_seconds, 1), "rss_mb": _rss_mb()[0]}


def summarise(result: dict) -> dict:
    """First-tenth vs last-tenth rate and memory: how flat the run stayed."""
    windows = result["windows"]
    tenth = max(1, len(windows) // 10)
    head, tail = windows[:tenth], windows[-tenth:]

    def mean(rows: list[dict], key: str) -> float:
        return round(sum(r[key] for r in rows) / len(rows), 1)

    return {"cpu_rate_first_tenth": mean(head, "pages_per_cpu_second"), "cpu_rate_last_tenth": mean(tail, "pages_per_cpu_second"),
            "rss_mb_first_tenth": mean(head, "rss_mb"), "rss_mb_last_tenth": mean(tail, "rss_mb"),
            "peak_rss_mb": max(r["peak_rss_mb"] for r in windows)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gb", type=float, default=3.0, help="uncompressed XML size of each synthetic dump")
    parser.add_argument("--sample", type=Path, default=SAMPLE)
    parser.add_argument("--window", type=int, default=20_000, help="pages per measurement window")
    parser.add_argument("--strip-pages", type=int, default=2_000, help="articles read by the full reader")
    parser.add_argument("--formats", default="multistream,bz2")
    parser.add_argument("--work", type=Path, default=None, help="where the dumps go (default: a temporary folder)")
    parser.add_argument("--keep", action="store_true", help="keep the generated dumps")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    if not args.sample.is_file():
        sys.exit(f"the dump sample is not at {args.sample} (pass --sample)")
    work = args.work or Path(tempfile.mkdtemp(prefix="bench-dump-"))
    work.mkdir(parents=True, exist_ok=True)
    header, pages, footer = split_sample(args.sample)
    report = {"sample_pages": len(pages), "target_xml_bytes": int(args.gb * 1e9), "load_average_start": os.getloadavg(),
              "runs": {}}
    for fmt in args.formats.split(","):
        path = work / f"synthetic-{fmt}.xml.bz2"
        began = time.perf_counter()
        written = write_dump(path, header, copies(pages, int(args.gb * 1e9)), footer, fmt == "multistream")
        written["write_seconds"] = round(time.perf_counter() - began, 1)
        print(f"{fmt}: wrote {written['pages']:,} pages, {written['xml_bytes'] / 1e9:.2f} GB of XML, "
              f"{written['bz2_bytes'] / 1e9:.2f} GB bz2, in {written['write_seconds']} s", flush=True)
        streamed = stream_pages(path, args.window)
        stripped = strip_pages(path, args.strip_pages)
        run = {**written, "stream": streamed, "flat": summarise(streamed), "strip": stripped}
        report["runs"][fmt] = run
        flat = run["flat"]
        print(f"  iter_pages: {streamed['pages']:,} pages in {streamed['seconds']} s; pages per CPU second "
              f"{flat['cpu_rate_first_tenth']} (first tenth) -> {flat['cpu_rate_last_tenth']} (last tenth); "
              f"RSS {flat['rss_mb_first_tenth']} -> {flat['rss_mb_last_tenth']} MB, peak {flat['peak_rss_mb']} MB", flush=True)
        print(f"  read_documents (stripped): {stripped['articles']} articles, {stripped['articles_per_cpu_second']} "
              f"per CPU second, RSS {stripped['rss_mb']} MB", flush=True)
        if not args.keep:
            path.unlink()
    report["load_average_end"] = os.getloadavg()
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
