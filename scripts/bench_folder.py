"""Build rate and update cost of an index of a folder of documents (docs/retrieval.md, "Folders").

    python scripts/bench_folder.py make FOLDER --files 1000      # Markdown, text, HTML and PDF from real paragraphs
    python scripts/bench_folder.py edit FOLDER --change 10 --add 5 --delete 5
    python scripts/bench_folder.py run FOLDER --files 1000 --name folder1000 --out bench-runs/folder1000.json

``make`` deals the open-corpus paragraphs of the three benchmark samples (HotpotQA, 2Wiki,
MuSiQue: ~6,600 real Wikipedia paragraphs) into FILES files in folders of 50: 70 %
Markdown (a title, one section per paragraph), 15 % plain text, 10 % HTML, 5 % PDF (a page
per paragraph); 200 paragraphs are held back for ``edit --add``. ``edit`` changes a
paragraph of some files, adds new files and deletes others (seeded). ``run`` does it all
with the real commands (``reagent index build``, ``index update`` after the edit, then an
update with nothing changed) and writes the figures: wall and CPU seconds of each command,
files and passages per second, what each update read and embedded.
"""

from __future__ import annotations

import argparse
import html
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from reagent_local.datasets import load_questions, open_corpus  # noqa: E402
from reagent_local.testing import text_pdf  # noqa: E402

DATA = Path(os.environ.get("REAGENT_SHARED_DATA", ROOT.parent / "shared" / "data"))
SOURCES = [("hotpotqa", "hotpotqa/hotpot_dev_distractor_sample200.json"),
           ("2wiki", "2wikimultihopqa/dev_distractor_sample464.json"),
           ("musique", "musique/musique_ans_dev_sample100.jsonl")]
HELD_BACK = 200


def paragraphs() -> list[tuple[str, str]]:
    """(title, text) of every open-corpus paragraph of the three samples, in a fixed order."""
    out: list[tuple[str, str]] = []
    for dataset, relative in SOURCES:
        out.extend((p.title, p.text) for p in open_corpus(load_questions(DATA / relative, dataset)))
    return out


def _markdown(title: str, items: list[tuple[str, str]]) -> str:
    sections = "".join(f"## {t}\n\n{textwrap.fill(x, 90)}\n\n" for t, x in items)
    return f"# {title}\n\nNotes gathered on {', '.join(t for t, _ in items)}.\n\n{sections}"


def _text(items: list[tuple[str, str]]) -> str:
    return "".join(f"{t}\n{textwrap.fill(x, 90)}\n\n" for t, x in items)


def _html(title: str, items: list[tuple[str, str]]) -> str:
    body = "".join(f"<h2>{html.escape(t)}</h2>\n<p>{html.escape(x)}</p>\n" for t, x in items)
    return f"<!DOCTYPE html>\n<html><head><title>{html.escape(title)}</title></head>\n<body>\n<h1>{html.escape(title)}</h1>\n{body}</body></html>\n"


def _pdf(title: str, items: list[tuple[str, str]]) -> bytes:
    pages = [f"{t}\n" + textwrap.fill(x, 90) for t, x in items]
    return text_pdf([_latin1(p) for p in pages], title=_latin1(title))


def _latin1(text: str) -> str:
    """What the hand-written PDF's Helvetica can show (Latin-1; other characters become ?)."""
    return text.encode("latin-1", "replace").decode("latin-1")


def write_file(folder: Path, number: int, items: list[tuple[str, str]]) -> Path:
    """File ``number`` of the folder holding these paragraphs, its kind by number (70/15/10/5 %)."""
    title = f"Notes {number:04d}: {items[0][0]}"
    kind = number % 20
    sub = folder / f"part-{number // 50:02d}"
    sub.mkdir(parents=True, exist_ok=True)
    if kind < 14:
        path = sub / f"notes-{number:04d}.md"
        path.write_text(_markdown(title, items), encoding="utf-8")
    elif kind < 17:
        path = sub / f"notes-{number:04d}.txt"
        path.write_text(_text(items), encoding="utf-8")
    elif kind < 19:
        path = sub / f"notes-{number:04d}.html"
        path.write_text(_html(title, items), encoding="utf-8")
    else:
        path = sub / f"notes-{number:04d}.pdf"
        path.write_bytes(_pdf(title, items))
    return path


def make(folder: Path, files: int, seed: int) -> dict:
    """Write the folder; returns its counts."""
    pool = paragraphs()
    random.Random(seed).shuffle(pool)
    used, held = pool[:-HELD_BACK], pool[-HELD_BACK:]
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    per = len(used) // files
    for number in range(files):
        write_file(folder, number, used[number * per:(number + 1) * per])
    (folder / ".held-back.json").write_text(json.dumps(held), encoding="utf-8")  # hidden: never indexed
    return {"files": files, "paragraphs": per * files, "paragraphs_per_file": per,
            "bytes": sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())}


def edit(folder: Path, change: int, add: int, delete: int, seed: int) -> dict:
    """Change one paragraph of ``change`` files, add ``add`` files, delete ``delete`` files."""
    rng = random.Random(seed)
    files = sorted(p for p in folder.rglob("notes-*") if p.suffix in (".md", ".txt", ".html"))
    picked = rng.sample(files, change + delete)
    for path in picked[:change]:
        text = path.read_text(encoding="utf-8")
        cut = text.index(". ", 200) + 1 if ". " in text[200:] else len(text) // 2
        path.write_text(text[:cut] + " This sentence was added by the edit." + text[cut:], encoding="utf-8")
    for path in picked[change:]:
        path.unlink()
    held = json.loads((folder / ".held-back.json").read_text(encoding="utf-8"))
    start = max(int(p.stem.split("-")[1]) for p in folder.rglob("notes-*")) + 1
    per = max(1, min(6, len(held) // max(add, 1)))
    for k in range(add):
        write_file(folder, start + k, [tuple(x) for x in held[k * per:(k + 1) * per]] or [("Empty", "Nothing.")])
    return {"changed": change, "added": add, "deleted": delete}


def _reagent(*args: str) -> dict:
    """Run a reagent command; wall and CPU seconds (user + system of the child)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "reagent_local", *args], capture_output=True, text=True)
    wall = time.perf_counter() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"reagent {' '.join(args)} failed:\n{done.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"command": "reagent " + " ".join(args), "wall_seconds": round(wall, 2), "cpu_seconds": round(cpu, 2),
            "stderr_tail": done.stderr.strip().splitlines()[-3:]}


def _info(name: str) -> dict:
    done = subprocess.run([sys.executable, "-m", "reagent_local", "index", "info", name, "--json"],
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def run(folder: Path, files: int, name: str, seed: int) -> dict:
    """make, build, edit, update, update again; every figure."""
    out: dict = {"load_before": os.getloadavg(), "make": make(folder, files, seed)}
    build = _reagent("index", "build", str(folder), "--name", name, "--quiet", "--force")
    info = _info(name)
    build.update(passages=info["passages"], files=info["folder"]["files"], build_seconds=info["build_seconds"],
                 steps=info["seconds"], embedding=info["embedding"],
                 files_per_second=round(info["folder"]["files"] / build["wall_seconds"], 2),
                 passages_per_second=round(info["passages"] / build["wall_seconds"], 2))
    out["build"] = build
    out["edit"] = edit(folder, 10, 5, 5, seed)
    for label in ("update", "update_unchanged"):
        done = _reagent("index", "update", name, "--quiet")
        info = _info(name)
        done.update(passages=info["passages"], build_seconds=info["build_seconds"], steps=info["seconds"],
                    update=info.get("update"))
        out[label] = done
    out["load_after"] = os.getloadavg()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="what", required=True)
    for what in ("make", "edit", "run"):
        p = sub.add_parser(what)
        p.add_argument("folder", type=Path)
        p.add_argument("--seed", type=int, default=13)
        if what in ("make", "run"):
            p.add_argument("--files", type=int, default=1000)
        if what == "edit":
            p.add_argument("--change", type=int, default=10)
            p.add_argument("--add", type=int, default=5)
            p.add_argument("--delete", type=int, default=5)
        if what == "run":
            p.add_argument("--name", default="folder-bench")
            p.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    if args.what == "make":
        result = make(args.folder, args.files, args.seed)
    elif args.what == "edit":
        result = edit(args.folder, args.change, args.add, args.delete, args.seed)
    else:
        result = run(args.folder, args.files, args.name, args.seed)
        if args.out:
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(json.dumps(result, indent=2), encoding="utf-8")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
