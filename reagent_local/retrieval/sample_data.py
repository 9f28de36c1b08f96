"""A real Wikipedia dump sample that a fresh machine can fetch from PyPI.

The gensim wheel ships a shortened English pages-articles dump (206 pages) in its test
data. ``fetch_wiki_sample`` downloads that wheel without installing it, extracts the
dump, checks its sha256 and keeps it in the cache folder.
"""

from __future__ import annotations

import hashlib
import zipfile
from pathlib import Path
from typing import Callable

from ..errors import ModelFetchError
from ..runtime.models import Downloader, pip_download

GENSIM_REQUIREMENT = "gensim==4.4.0"
WIKI_SAMPLE_FILE = "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"
WIKI_SAMPLE_SHA256 = "a53f4648dec40467ebdcbc7a1307eddb51fe6e28e9309f6ebde81ba0d04bea2d"
_MEMBER = f"gensim/test/test_data/{WIKI_SAMPLE_FILE}"


def wiki_sample_path(cache_dir: Path) -> Path:
    """Where the fetched dump sample lives."""
    return Path(cache_dir) / "data" / WIKI_SAMPLE_FILE


def fetch_wiki_sample(cache_dir: Path, *, downloader: Downloader = pip_download,
                      log: Callable[[str], None] = lambda _m: None) -> Path:
    """Return the dump sample's path, fetching and verifying it first if needed."""
    target = wiki_sample_path(cache_dir)
    if target.is_file() and hashlib.sha256(target.read_bytes()).hexdigest() == WIKI_SAMPLE_SHA256:
        log(f"wiki sample present: {target}")
        return target
    wheels = Path(cache_dir) / "data" / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    if not list(wheels.glob("gensim-4.4.0-*.whl")):
        log(f"downloading {GENSIM_REQUIREMENT} (only to extract its test dump; it is not installed) ...")
        downloader([GENSIM_REQUIREMENT], wheels)
    wheel = sorted(wheels.glob("gensim-4.4.0-*.whl"))[0]
    with zipfile.ZipFile(wheel) as archive:
        data = archive.read(_MEMBER)
    if hashlib.sha256(data).hexdigest() != WIKI_SAMPLE_SHA256:
        raise ModelFetchError(f"the dump inside {wheel.name} has an unexpected checksum", hint=f"delete {wheels} and fetch again")
    partial = target.with_suffix(".partial")
    partial.write_bytes(data)
    partial.replace(target)
    log(f"wiki sample: {target} ({len(data):,} bytes)")
    return target
