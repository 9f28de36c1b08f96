"""Make the folder of real technical documents that scripts/techdocs_questions.json asks about.

The documents are the long descriptions (READMEs and changelogs) that installed packages carry in
their METADATA, for the exact versions pinned in scripts/constraints.txt, so the folder is the
same on every machine set up by scripts/setup.sh. Each file is written as
``<distribution>/README.md`` (or ``.rst``: read as plain text), its metadata headers dropped.
The question file records each document's sha256; a document that differs (another version
installed) is named, since its questions' gold passages may have moved or gone.

    python scripts/techdocs_folder.py DEST          # then:
    reagent bench retrieval --folder DEST --questions scripts/techdocs_questions.json [--tokenizer 1]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from email.parser import HeaderParser
from importlib import metadata
from pathlib import Path

QUESTIONS = Path(__file__).with_name("techdocs_questions.json")


def description(dist: str) -> tuple[str, str]:
    """(body, suffix) of a distribution's long description: Markdown as .md, anything else as .rst."""
    raw = metadata.distribution(dist).read_text("METADATA") or ""
    message = HeaderParser().parsestr(raw)
    body = message.get_payload() or message.get("Description") or ""
    kind = (message.get("Description-Content-Type") or "").split(";")[0].strip()
    return body.strip() + "\n", ".md" if kind == "text/markdown" else ".rst"


def make(dest: Path, documents: dict[str, str]) -> list[str]:
    """Write every document into ``dest``; return the names of those whose sha256 differs from the recorded one."""
    differ = []
    for dist, recorded in documents.items():
        body, suffix = description(dist)
        target = dest / dist / f"README{suffix}"
        target.parent.mkdir(parents=True, exist_ok=True)
        data = body.encode("utf-8")
        target.write_bytes(data)
        if hashlib.sha256(data).hexdigest() != recorded:
            differ.append(f"{dist} ({metadata.version(dist)})")
    return differ


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dest", type=Path)
    parser.add_argument("--record", action="store_true", help="write the documents' sha256 into the question file")
    args = parser.parse_args()
    spec = json.loads(QUESTIONS.read_text(encoding="utf-8"))
    differ = make(args.dest, spec["documents"])
    if args.record:
        for dist in spec["documents"]:
            body, _ = description(dist)
            spec["documents"][dist] = hashlib.sha256(body.encode("utf-8")).hexdigest()
        QUESTIONS.write_text(json.dumps(spec, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        differ = []
    print(f"wrote {len(spec['documents'])} documents to {args.dest}")
    for name in differ:
        print(f"warning: {name} differs from the document the questions were written on", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
