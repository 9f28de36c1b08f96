"""How many gold supporting sentences survive when passages are cut for the reader.

    .venv/bin/python scripts/bench_focus.py --dataset hotpotqa \
        --file ../shared/data/hotpotqa/hotpot_dev_distractor_sample200.json \
        --ids ../shared/data/splits/hotpotqa-tune.txt --limits 300,400,500

No model runs: for every supporting paragraph of every question (HotpotQA and 2Wiki mark
the supporting sentences), the paragraph is shown as the retriever would show it with the
question as the query: cut at ``passage_chars`` (what the baselines read, focus off) and
focused at each limit. A supporting sentence counts as kept when the shown text holds it
whole. Prints one row per setting: sentences kept, characters shown per paragraph.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from reagent_local.agents.focus import focus  # noqa: E402
from reagent_local.core.evidence import flatten  # noqa: E402


def _one_line(text: str) -> str:
    return " ".join(text.split())


def supporting_paragraphs(path: Path, ids: set[str] | None) -> list[tuple[str, str, list[str]]]:
    """(question, paragraph text, its supporting sentences) for every supporting paragraph."""
    out = []
    for q in json.loads(path.read_text(encoding="utf-8")):
        if ids is not None and q["_id"] not in ids:
            continue
        context = {title: sents for title, sents in q["context"]}
        wanted: dict[str, list[int]] = {}
        for title, index in q["supporting_facts"]:
            wanted.setdefault(title, []).append(index)
        for title, indexes in wanted.items():
            sents = context.get(title)
            if sents is None:
                continue
            gold = [_one_line(sents[i]) for i in indexes if i < len(sents) and sents[i].strip()]
            out.append((q["question"], "".join(sents), gold))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", choices=("hotpotqa", "2wiki"), required=True)
    parser.add_argument("--file", type=Path, required=True)
    parser.add_argument("--ids", type=Path, help="one question id per line (default: every question)")
    parser.add_argument("--limits", default="300,400,500", help="focus_chars values to compare")
    parser.add_argument("--passage-chars", type=int, default=700)
    args = parser.parse_args()
    ids = set(args.ids.read_text().split()) if args.ids else None
    paragraphs = supporting_paragraphs(args.file, ids)
    settings = [("cut", args.passage_chars)] + [("focus", int(n)) for n in args.limits.split(",")]
    total = sum(len(gold) for _, _, gold in paragraphs)
    print(f"{args.dataset}: {len(paragraphs)} supporting paragraphs, {total} supporting sentences")
    print("| setting | sentences kept | chars shown / paragraph |")
    print("|---|---|---|")
    for kind, limit in settings:
        kept = shown_chars = 0
        for question, text, gold in paragraphs:
            shown = (flatten(text, limit) if kind == "cut"
                     else focus(text, question, min(limit, args.passage_chars)))
            shown_chars += len(shown)
            kept += sum(sentence in shown for sentence in gold)
        label = f"cut at {limit} (focus off)" if kind == "cut" else f"focus_chars {limit}"
        print(f"| {label} | {kept / total:.3f} | {shown_chars / len(paragraphs):.0f} |")


if __name__ == "__main__":
    main()
