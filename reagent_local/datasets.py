"""Readers for the three multi-hop QA benchmarks in their official record formats.

HotpotQA (``hotpot_dev_distractor_v1.json``), 2WikiMultiHopQA (``dev.json``) and
MuSiQue (``musique_ans_v1.0_dev.jsonl``). Every question carries its own context
paragraphs and its gold supporting paragraphs; ``open_corpus`` pools the paragraphs
of many questions into the open-corpus knowledge base (deduplicated by identical
title and text, never by title alone).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator

from .errors import DatasetFormatError

DATASETS = ("hotpotqa", "2wiki", "musique")


@dataclass(frozen=True)
class Paragraph:
    """One titled paragraph of a benchmark's context."""

    title: str
    text: str


@dataclass(frozen=True)
class Question:
    """One benchmark question with its answers, context and gold support."""

    id: str
    dataset: str  # "hotpotqa" | "2wiki" | "musique"
    question: str
    answers: tuple[str, ...]  # answers[0] is the gold answer, the rest aliases
    type: str  # the dataset's question type ("bridge", "comparison", "2hop", ...)
    paragraphs: tuple[Paragraph, ...]
    supporting: tuple[Paragraph, ...]
    supporting_titles: tuple[str, ...]


def _bad(path: Path, what: str, dataset: str | None = None) -> DatasetFormatError:
    name = f" {dataset}" if dataset else ""
    return DatasetFormatError(
        f"{path} is not a valid{name} benchmark file: {what}",
        hint="pass the official file (HotpotQA/2Wiki: a JSON array; MuSiQue: JSONL), or set --dataset",
    )


def _read_records(path: Path) -> list[dict[str, Any]]:
    """Read a JSON array or a JSONL file of objects; errors name the file and line."""
    path = Path(path)
    if not path.is_file():
        raise DatasetFormatError(f"{path} does not exist or is not a file", hint="check the path")
    try:
        raw = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise _bad(path, "not UTF-8 text") from None
    stripped = raw.lstrip()
    if not stripped:
        raise _bad(path, "the file is empty")
    if stripped.startswith("["):
        try:
            data = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise _bad(path, f"invalid JSON ({exc})") from None
        records = data
    else:
        records = []
        for lineno, line in enumerate(raw.splitlines(), 1):
            if not line.strip():
                continue
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise _bad(path, f"line {lineno} is not JSON ({exc.msg})") from None
    if not records or not all(isinstance(r, dict) for r in records):
        raise _bad(path, "expected a non-empty list of JSON objects")
    return records


def detect_records(records: list[dict[str, Any]]) -> str | None:
    """The benchmark whose layout the first record has ("hotpotqa", "2wiki", "musique"), or None."""
    first = records[0]
    if "paragraphs" in first:
        return "musique"
    if "context" in first and ("evidences" in first or "entity_ids" in first):
        return "2wiki"
    if "context" in first and "_id" in first:
        return "hotpotqa"
    return None


def detect_dataset(path: Path) -> str:
    """Name the benchmark a file belongs to ("hotpotqa", "2wiki" or "musique")."""
    found = detect_records(_read_records(path))
    if found is None:
        raise _bad(path, "its records match none of HotpotQA, 2WikiMultiHopQA, MuSiQue")
    return found


def _join_sentences(sentences: Iterable[str]) -> str:
    """Join sentences: HotpotQA keeps the leading space in each, 2Wiki does not."""
    out = ""
    for sentence in sentences:
        if out and not out[-1].isspace() and sentence[:1] and not sentence[0].isspace():
            out += " "
        out += sentence
    return out.strip()


def _dedup(paragraphs: Iterable[Paragraph]) -> tuple[Paragraph, ...]:
    return tuple(dict.fromkeys(paragraphs))


def _context_question(record: dict[str, Any], dataset: str) -> Question:
    """HotpotQA and 2Wiki share the ``context`` / ``supporting_facts`` layout."""
    paragraphs = _dedup(Paragraph(str(title), _join_sentences(sents)) for title, sents in record["context"])
    titles = tuple(dict.fromkeys(str(fact[0]) for fact in record.get("supporting_facts", [])))
    supporting = tuple(p for t in titles for p in paragraphs if p.title == t)
    answer = str(record.get("answer", ""))
    aliases = [str(a) for a in record.get("answer_aliases", []) if str(a) != answer]
    return Question(
        id=str(record["_id"]),
        dataset=dataset,
        question=str(record["question"]),
        answers=(answer, *aliases),
        type=str(record.get("type", "")),
        paragraphs=paragraphs,
        supporting=supporting,
        supporting_titles=titles,
    )


def _musique_question(record: dict[str, Any]) -> Question:
    paragraphs = _dedup(Paragraph(str(p["title"]), str(p["paragraph_text"]).strip()) for p in record["paragraphs"])
    supporting = _dedup(
        Paragraph(str(p["title"]), str(p["paragraph_text"]).strip()) for p in record["paragraphs"] if p.get("is_supporting")
    )
    answer = str(record.get("answer", ""))
    aliases = [str(a) for a in record.get("answer_aliases", []) if str(a) != answer]
    qid = str(record["id"])
    return Question(
        id=qid,
        dataset="musique",
        question=str(record["question"]),
        answers=(answer, *aliases),
        type=qid.split("__", 1)[0] if "__" in qid else "",
        paragraphs=paragraphs,
        supporting=supporting,
        supporting_titles=tuple(dict.fromkeys(p.title for p in supporting)),
    )


def _iter_questions(records: list[dict[str, Any]], dataset: str, path: Path, answerable_only: bool) -> Iterator[Question]:
    for number, record in enumerate(records, 1):
        try:
            if dataset == "musique":
                if answerable_only and record.get("answerable") is False:
                    continue
                yield _musique_question(record)
            else:
                yield _context_question(record, dataset)
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            raise _bad(path, f"record {number} lacks or mangles a field ({type(exc).__name__}: {exc})", dataset) from None


def load_questions(path: Path, dataset: str | None = None, *, answerable_only: bool = True) -> list[Question]:
    """Read every question of a benchmark file; ``dataset`` None means detect it.

    ``answerable_only`` drops MuSiQue-Full's unanswerable questions (others have none).
    """
    path = Path(path)
    if dataset is not None and dataset not in DATASETS:
        raise DatasetFormatError(f"unknown dataset {dataset!r}", hint=f"choose one of {', '.join(DATASETS)}")
    records = _read_records(path)
    detected = detect_records(records)
    if detected is None:
        raise _bad(path, "its records match none of HotpotQA, 2WikiMultiHopQA, MuSiQue", dataset)
    if dataset is not None and detected != dataset and not {detected, dataset} <= {"hotpotqa", "2wiki"}:
        raise DatasetFormatError(
            f"{path} looks like a {detected} file, not {dataset}",
            hint=f"pass --dataset {detected} or the right file",
        )
    return list(_iter_questions(records, dataset or detected, path, answerable_only))


@dataclass(frozen=True)
class Hop:
    """One gold step of a question: what it asks and its answers (MuSiQue's last hop answers the question)."""

    question: str
    answers: tuple[str, ...]


def gold_hops(path: Path, dataset: str | None = None) -> dict[str, tuple[Hop, ...]]:
    """Each question's gold steps, by id, where the file gives them.

    MuSiQue: ``question_decomposition`` (each hop's question and answer, in order); 2Wiki:
    ``evidences``, one hop per (subject, relation, object) triple, answered by the object.
    HotpotQA gives none: ``{}``.
    """
    path = Path(path)
    records = _read_records(path)
    dataset = dataset or detect_records(records)
    out: dict[str, tuple[Hop, ...]] = {}
    for record in records:
        if dataset == "musique":
            hops = [Hop(str(h.get("question", "")), (str(h.get("answer", "")),))
                    for h in record.get("question_decomposition") or []]
            out[str(record.get("id"))] = tuple(hops)
        elif dataset == "2wiki":
            hops = [Hop(f"{t[0]} >> {t[1]}", (str(t[2]),)) for t in record.get("evidences") or [] if len(t) == 3]
            out[str(record.get("_id"))] = tuple(hops)
    return out


def open_corpus(questions: Iterable[Question]) -> list[Paragraph]:
    """The open-corpus knowledge base: all paragraphs, deduplicated by (title, text), in first-seen order."""
    seen: dict[Paragraph, None] = {}
    for question in questions:
        for paragraph in question.paragraphs:
            seen.setdefault(paragraph, None)
    return list(seen)
