"""What the knowledge graph adds to passage retrieval, measured with template questions built from the graph.

For every (subject, relation) of an index's graph under a shared relation name, a
template gives a question ("What is the capital of Alabama?") whose gold answers are
that subject's values for the relation. Per question: do the hybrid top-k passages
contain a gold value (folded text match, lenient toward passages), do the graph
search's top-k triples contain a gold triple (and is its first triple one), and does
either. The questions come from the graph itself, so the graph's recall is an upper
bound of what it can add, not a QA score."""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from ..config import Config
from ..errors import ReagentError
from ..dates import display_date, iso_parts
from ..text import fold
from ..retrieval.kg_lookup import NoKnowledgeGraphError, open_index_graph
from ..kg.store import KnowledgeGraph
from ..kg.triples import Triple

NOTE = ("template questions built from the graph itself: an upper bound on what the graph can add "
        "to passage retrieval, not a QA score")

# One question per shared relation ("answer" is the core's, never an infobox key).
TEMPLATES: dict[str, str] = {
    "capital": "What is the capital of {subject}?",
    "largest_city": "What is the largest city of {subject}?",
    "population": "What is the population of {subject}?",
    "country": "What country is {subject} from?",
    "located_in": "Where is {subject} located?",
    "birth_date": "When was {subject} born?",
    "birth_place": "Where was {subject} born?",
    "death_date": "When did {subject} die?",
    "death_place": "Where did {subject} die?",
    "nationality": "What is the nationality of {subject}?",
    "spouse": "Who was {subject} married to?",
    "director": "Who directed {subject}?",
    "author": "Who wrote {subject}?",
    "starring": "Who starred in {subject}?",
    "genre": "What genre is {subject}?",
    "language": "What is the language of {subject}?",
    "release_date": "When was {subject} released?",
    "founded": "When was {subject} founded?",
}

_PARENTHETICAL = re.compile(r"\s*\([^()]*\)")
_TRAILING_SHARE = re.compile(r"\s+[\d.,]+\s*%$")  # "English 95.1%": the share is a note on the answer


@dataclass(frozen=True)
class TemplateQuestion:
    """A question about one subject's relation, with the triples that answer it."""

    subject: str
    relation: str
    question: str
    gold: tuple[Triple, ...]


def question_subject(title: str) -> str:
    """How a question names an article: its title without a disambiguator (``Animalia (book)`` -> ``Animalia``)."""
    return _PARENTHETICAL.sub("", title).strip() or title


def template_questions(graph: KnowledgeGraph, limit: int | None = None) -> list[TemplateQuestion]:
    """One question per (subject, relation) with a template, relations taken in turn so --limit covers many."""
    grouped: dict[str, dict[str, list[Triple]]] = {}
    for triple in graph.iter_all():
        if triple.relation in TEMPLATES:
            grouped.setdefault(triple.relation, {}).setdefault(triple.subject, []).append(triple)
    queues = [
        [TemplateQuestion(s, rel, TEMPLATES[rel].format(subject=question_subject(s)), tuple(ts))
         for s, ts in grouped[rel].items()]
        for rel in sorted(grouped)
    ]
    out: list[TemplateQuestion] = []
    for i in range(max((len(q) for q in queues), default=0)):
        out.extend(q[i] for q in queues if i < len(q))
    return out[:limit] if limit is not None else out


def _date_forms(iso: str) -> list[str]:
    """``1809-02-12`` -> ``February 12, 1809`` and ``12 February 1809``; ``1709-04`` -> ``April 1709``."""
    parts = iso_parts(iso)
    if parts is None or parts[0] <= 0:  # years BC (astronomical "-0383"): the value text is already "384 BC"
        return []
    year, month, day = parts
    if month is None or day is None:
        return [display_date(year, month, None)]
    return [display_date(year, month, day), display_date(year, month, day, day_first=True)]


def answer_forms(triple: Triple) -> set[str]:
    """Folded texts that count as the triple's answer in a passage.

    The value, the infobox's shown text, both without parenthetical notes or a
    trailing share (``English 95.1%``), a linked place's head (``Hodgenville,
    Kentucky`` -> ``hodgenville``), dates in both usual orders, and numbers with and
    without thousands separators.
    """
    texts = {triple.value, triple.display or ""}
    texts |= {_PARENTHETICAL.sub("", t) for t in list(texts)}
    texts |= {_TRAILING_SHARE.sub("", t) for t in list(texts)}
    if triple.value_date:
        texts.update(_date_forms(triple.value_date))
    elif triple.value_number is not None:
        if float(triple.value_number).is_integer():
            texts |= {f"{int(triple.value_number):,}", str(int(triple.value_number))}
    elif "," in triple.value:
        texts.add(_PARENTHETICAL.sub("", triple.value).split(",")[0])
    return {f for f in (fold(t) for t in texts) if f}


def contains_answer(passages: Iterable[str], gold: Sequence[Triple]) -> bool:
    """True when a folded passage holds any gold triple's answer form as whole words."""
    forms = {f for t in gold for f in answer_forms(t)}
    for text in passages:
        padded = f" {fold(text)} "
        if any(f" {form} " in padded for form in forms):
            return True
    return False


def _empty_report(index: str, reason: str) -> dict:
    return {"index": index, "kg": False, "reason": reason, "note": NOTE, "questions": 0,
            "overall": None, "by_relation": {}, "records": []}


def run_kg_bench(index_name: str, config: Config, *, limit: int | None = None, passages_k: int = 5,
                 kg_k: int = 10, mode: str = "hybrid") -> dict:
    """Passage, graph and combined answer recall on template questions over the index's own graph."""
    from ..retrieval import Index

    if limit is not None and limit < 1:
        raise ReagentError(f"--limit must be at least 1, got {limit}")
    try:
        graph = open_index_graph(index_name, config)
    except NoKnowledgeGraphError as exc:
        return _empty_report(index_name, exc.message)
    with graph:
        questions = template_questions(graph, limit)
        if not questions:
            return _empty_report(index_name, "the graph holds no triple under the shared relation names "
                                             "(no infobox gave a capital, birth date, director, ...)")
        records, passage_ms, graph_ms = [], [], []
        with Index.open(index_name, config) as index:
            index.search(questions[0].question, k=passages_k, mode=mode)  # load the model and files first
            for q in questions:
                began = time.perf_counter()
                hits = index.search(q.question, k=passages_k, mode=mode)
                passage_ms.append((time.perf_counter() - began) * 1000)
                began = time.perf_counter()
                triples = graph.search(q.question, k=kg_k)
                graph_ms.append((time.perf_counter() - began) * 1000)
                records.append(_record(q, hits, triples))
    by_relation = {rel: _summary([r for r in records if r["relation"] == rel])
                   for rel in sorted({r["relation"] for r in records})}
    return {
        "index": index_name, "kg": True, "reason": None, "note": NOTE, "questions": len(records),
        "limit": limit, "mode": mode, "passages_k": passages_k, "kg_k": kg_k,
        "overall": _summary(records), "by_relation": by_relation,
        "latency_ms": {"passages_p50": _p(passage_ms, 50), "graph_p50": _p(graph_ms, 50), "graph_p95": _p(graph_ms, 95)},
        "records": records,
    }


def _record(q: TemplateQuestion, hits: list, triples: list[Triple]) -> dict:
    gold = set(q.gold)
    graph_rank = next((i for i, t in enumerate(triples, 1) if t in gold), None)
    return {"subject": q.subject, "relation": q.relation, "question": q.question,
            "gold": [t.value for t in q.gold],
            "passages": contains_answer((f"{h.passage.title}\n{h.passage.text}" for h in hits), q.gold),
            "graph": graph_rank is not None, "graph_rank": graph_rank,
            "passage_ids": [h.passage.id for h in hits]}


def _summary(records: list[dict]) -> dict:
    n = len(records)
    counts = {"passages": 0, "graph": 0, "graph_top1": 0, "union": 0, "only_graph": 0, "only_passages": 0}
    for r in records:
        p, g = r["passages"], r["graph"]
        for key, hit in (("passages", p), ("graph", g), ("graph_top1", r["graph_rank"] == 1), ("union", p or g),
                         ("only_graph", g and not p), ("only_passages", p and not g)):
            counts[key] += bool(hit)
    return {"n": n, **{key: (c / n if n else 0.0) for key, c in counts.items()}}


def _p(values: list[float], q: int) -> float:
    return float(np.percentile(values, q)) if values else 0.0


def format_kg_table(report: dict) -> str:
    """The report as text: the caveat, then recall per relation and overall."""
    if not report["kg"]:
        return f"index {report['index']}: the knowledge graph adds nothing.\n{report['reason']}"
    head = ["relation", "n", f"passages@{report['passages_k']}", f"graph@{report['kg_k']}", "graph@1", "either",
            "only graph"]
    keys = ("passages", "graph", "graph_top1", "union", "only_graph")
    rows = [head]
    for name, s in [*report["by_relation"].items(), ("all", report["overall"])]:
        rows.append([name, str(s["n"])] + [f"{s[key]:.3f}" for key in keys])
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    lines = ["  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))) for r in rows]
    lat = report["latency_ms"]
    return "\n".join([
        f"What the knowledge graph adds on index {report['index']}: {report['questions']} questions",
        f"({report['note']}; passages: {report['mode']} search)",
        *lines,
        f"latency p50: passages {lat['passages_p50']:.1f} ms, graph {lat['graph_p50']:.1f} ms "
        f"(graph p95 {lat['graph_p95']:.1f} ms)",
    ])


def write_kg_report(report: dict, path: Path) -> Path:
    """Write the report as JSON (creating the folder)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2, ensure_ascii=False), encoding="utf-8")
    return path

