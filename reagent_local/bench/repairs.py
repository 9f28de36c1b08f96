"""Why backtracking's repairs fail: every question where it fired, sorted into one category.

A question counts when its record says backtracking fired (``backtracked``: a local or global
backtrack). Against the answer the question gets with backtracking off (exact, by EM):

- **repaired**: wrong without backtracking, right with it; **broken**: the reverse;
- **right before and after**: it fired on an answer that was right and stayed right;
- every other question (wrong after, and wrong without: unchanged, or one wrong answer for
  another) gets the first failure along its chain, checked in this order:

  1. **gold evidence never retrieved**: some gold supporting paragraph is in none of the
     passages the retriever handed on in the run (every step, every attempt, the whole
     question's read), from the run's event log;
  2. **retrieved, not cited**: all were retrieved, some is not among the final answer's cited
     passages;
  3. **reached, not chosen**: all were cited, and some step's answer (at any attempt) or some
     road's answer matches the gold answer, but the run answered otherwise;
  4. **the plan could not reach the answer**: the run's last plan has fewer steps than the
     question has gold hops (MuSiQue: its decomposition; 2Wiki: its evidence triples; HotpotQA:
     its supporting articles); no plan logged counts as one step (the whole question read);
  5. **cited, a step's answer wrong**: the dataset gives gold step answers (MuSiQue's hop
     answers, 2Wiki's triple objects), the plan had a step for each hop, and some gold step
     answer is matched by no step's answer at any attempt (the last hop's gold answer is the
     question's, so a plan whose steps were right up to a wrong last step counts here);
  6. **cited, final answer wrong**: the same, where the dataset gives no gold step answers
     (HotpotQA).

A step answer matches a gold one when, after the official normalisation, the tokens of the
shorter are all in the longer (so "8 March 1975" matches "March 8, 1975", and "Curtin" matches
"John Curtin"). A passage supports a gold paragraph as ``metrics.passage_supports`` says, and
also when it is a cut or focused view of it (its pieces, between "…" gaps and before a final
"...", are each inside the gold text). A folder without its event log still gets the first
three rows; the others are marked "needs the run's log".
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from ..datasets import Hop, Question, gold_hops, load_questions
from ..errors import BenchRunError
from .compare import em_without, record_backtracked, same_answer
from .metrics import normalize_answer, passage_supports
from .records import RECORDS_FILE, read_records
from .runner import gold_support
from .rundir import read_run_config

Record = dict[str, Any]
EVENTS_FILE = "events.duckdb"

REPAIRED = "repaired"
BROKEN = "broken"
STAYED_RIGHT = "right before and after"
NOT_RETRIEVED = "gold evidence never retrieved"
NOT_CITED = "retrieved, not cited"
NOT_CHOSEN = "reached, not chosen"
PLAN_SHORT = "the plan could not reach the answer"
STEP_WRONG = "cited, a step's answer wrong"
FINAL_WRONG = "cited, final answer wrong"
NEEDS_LOG = "needs the run's log"
UNKNOWN = "answer without backtracking unknown"
CATEGORIES = (REPAIRED, BROKEN, STAYED_RIGHT, NOT_RETRIEVED, NOT_CITED, NOT_CHOSEN, PLAN_SHORT, STEP_WRONG,
              FINAL_WRONG, NEEDS_LOG, UNKNOWN)


@dataclass(frozen=True)
class Gold:
    """What the dataset says of one question: its supporting paragraphs, its hops and its answers."""

    support: tuple[tuple[str, str | None], ...]  # (title, text or None: by title) as the runner scores citations
    hops: tuple[Hop, ...]  # () when the dataset gives none
    answers: tuple[str, ...]
    hop_count: int  # gold hops, or supporting articles where the dataset gives no hops


@dataclass(frozen=True)
class Seen:
    """What one run's event log shows: passages retrieved, the last plan's size, every step answer."""

    passages: Mapping[str, tuple[str, str]]  # passage id -> (title, text as the reader saw it)
    plan_steps: int | None  # steps of the last plan; None: no plan was logged
    step_answers: tuple[str, ...]  # every answer a step gave, at any attempt (and the controller's overrides)


def gold_of(question: Question, hops: Sequence[Hop] = ()) -> Gold:
    """The gold facts of a question, with its hops where the dataset file gives them."""
    support = tuple(gold_support(question))
    count = len(hops) or len(question.supporting_titles) or 1
    return Gold(support, tuple(hops), tuple(question.answers), count)


def tokens_match(answer: str, gold: str) -> bool:
    """Whether the shorter of two answers' normalised tokens all occur in the longer."""
    mine, theirs = normalize_answer(answer).split(), normalize_answer(gold).split()
    if not mine or not theirs:
        return False
    short, long = sorted((mine, theirs), key=len)
    return not Counter(short) - Counter(long)


def matches_any(answers: Iterable[str], golds: Sequence[str]) -> bool:
    """Whether some answer matches some gold answer (``tokens_match``)."""
    return any(tokens_match(a, g) for a in answers if a for g in golds if g)


def supports(title: str, text: str, gold_title: str, gold_text: str | None) -> bool:
    """Whether a passage (possibly cut or focused for a prompt) is the gold paragraph."""
    return passage_supports(title, text, gold_title, gold_text)


def gold_found(passages: Iterable[tuple[str, str]], support: Sequence[tuple[str, str | None]]) -> list[bool]:
    """For each gold paragraph, whether some passage supports it."""
    passages = list(passages)
    return [any(supports(t, x, gt, gx) for t, x in passages) for gt, gx in support]


def seen_in(bodies: Iterable[Any]) -> Seen:
    """What a run's decoded events show (``core.events.decode`` of ``EventLog.events``)."""
    from ..core import events as ev

    passages: dict[str, tuple[str, str]] = {}
    plan: int | None = None
    answers: list[str] = []
    for body in bodies:
        if isinstance(body, ev.Message) and body.body == "EvidenceFound":
            for p in body.payload.get("passages") or []:
                passages.setdefault(str(p.get("id")), (str(p.get("title", "")), str(p.get("text", ""))))
        elif isinstance(body, ev.Plan):
            plan = len(body.subquestions)
        elif isinstance(body, (ev.Decision, ev.Override)) and body.answer:
            answers.append(body.answer)
        elif isinstance(body, ev.Assert) and body.statement.agent == "verifier" \
                and body.statement.subquestion is not None and " -> " in body.statement.text:
            # every attempt's answer is held a while as "sub-question -> answer", even one a surer attempt outranks
            answers.append(body.statement.text.rsplit(" -> ", 1)[1])
    return Seen(passages, plan, tuple(dict.fromkeys(answers)))


def _row(record: Record, category: str, **detail: Any) -> Record:
    without = record.get("answer_without_backtracking")
    if without is None:
        without = record.get("answer_before_backtracking")
    return {"id": str(record["id"]), "dataset": record.get("dataset"), "type": record.get("type"),
            "category": category, "signals": list(dict.fromkeys(record.get("signals") or [])),
            "backtracks": record.get("backtracks") or {}, "answer_without": without,
            "answer_before": record.get("answer_before_backtracking"), "answer": record.get("prediction"),
            "gold": (record.get("answers") or [None])[0], "changed": _changed(record), **detail}


def _changed(record: Record) -> bool | None:
    """Whether backtracking changed the answer (against the answer without it, else the one before it)."""
    changed = record.get("backtracking_changed_answer")
    if changed is not None:
        return bool(changed)
    without = record.get("answer_without_backtracking") or record.get("answer_before_backtracking")
    return None if without is None else not same_answer(without, record.get("prediction") or "")


def classify(record: Record, gold: Gold, seen: Seen | None) -> Record:
    """The row of one question where backtracking fired: its category and what decided it."""
    before, after = em_without(record), record.get("em")
    if before is None:
        if after:
            return _row(record, UNKNOWN)
    elif before == 0 and after == 1:
        return _row(record, REPAIRED)
    elif before == 1 and after == 0:
        return _row(record, BROKEN)
    elif before == 1 and after == 1:
        return _row(record, STAYED_RIGHT)
    recall = record.get("support_recall")
    if seen is None:
        cited = "all gold cited" if recall == 1 else "gold not all cited" if recall is not None else "no gold support"
        return _row(record, NEEDS_LOG, note=cited)
    retrieved = gold_found(seen.passages.values(), gold.support)
    cited_ids = [str(c.get("id")) for c in record.get("cited") or []]
    cited_passages = [seen.passages.get(i) or (str(c.get("title", "")), "")
                      for i, c in zip(cited_ids, record.get("cited") or [])]
    cited = gold_found(cited_passages, gold.support)
    roads = record.get("roads") or {}
    reached = matches_any([*seen.step_answers, roads.get("chain") or "", roads.get("whole") or ""], gold.answers)
    intermediate = list(gold.hops[:-1])
    if record.get("dataset") == "2wiki":  # triples whose object is not the answer: the comparison's values
        intermediate = [h for h in gold.hops if not matches_any(h.answers, gold.answers)]
    missing = [h.question for h in intermediate if not matches_any(seen.step_answers, h.answers)]
    plan = seen.plan_steps if seen.plan_steps is not None else 1
    detail = {"gold_retrieved": f"{sum(retrieved)}/{len(retrieved)}", "gold_cited": f"{sum(cited)}/{len(cited)}",
              "plan_steps": seen.plan_steps, "hops": gold.hop_count, "missing_steps": missing, "reached": reached}
    if not all(retrieved):
        category = NOT_RETRIEVED
    elif not all(cited):
        category = NOT_CITED
    elif reached:
        category = NOT_CHOSEN
    elif plan < gold.hop_count:
        category = PLAN_SHORT
    else:  # no step reached the gold answer: with gold hops, some step (the last at least) answered wrong
        category = STEP_WRONG if gold.hops else FINAL_WRONG
    return _row(record, category, **detail)


def _dataset_gold(run: Mapping[str, Any], folder: Path, ids: set[str]) -> dict[str, Gold]:
    """The gold facts of the folder's questions, from the dataset file its config.json names."""
    path, dataset = Path(str(run.get("file") or "")), run.get("dataset")
    if not path.is_file():
        raise BenchRunError(f"the dataset file of {folder} is not at {path}",
                            hint="put the file back where config.json says (its 'file' field), or edit that field")
    questions = {q.id: q for q in load_questions(path, dataset) if q.id in ids}
    missing = sorted(ids - set(questions))
    if missing:
        raise BenchRunError(f"{len(missing)} question(s) of {folder} are not in {path} (e.g. {missing[0]})",
                            hint="config.json names another file than the one the run answered")
    hops = gold_hops(path, dataset)
    return {qid: gold_of(q, hops.get(qid, ())) for qid, q in questions.items()}


def _seen_runs(path: Path, run_ids: Sequence[str]) -> dict[str, Seen] | None:
    """What the log shows of each run (a run absent from the log is left out); None without a log."""
    if not path.exists():
        return None
    from ..core import events as ev
    from ..core.log import EventLog

    out = {}
    with EventLog(path, read_only=True) as log:
        for run_id in run_ids:
            events = log.events(run_id)
            if events:
                out[run_id] = seen_in(ev.decode(e) for e in events)
    return out


def folder_rows(folder: Path, method: str = "reagent-both") -> Record:
    """One run folder's rows: every question where ``method``'s backtracking fired, classified."""
    folder = Path(folder)
    run = read_run_config(folder)
    records = [r for r in read_records(folder / RECORDS_FILE) if r["method"] == method]
    if not records:
        present = sorted({r["method"] for r in read_records(folder / RECORDS_FILE)})
        raise BenchRunError(f"no records of {method} in {folder}", hint=f"methods there: {', '.join(present) or 'none'}")
    fired = [r for r in records if record_backtracked(r)]
    gold = _dataset_gold(run, folder, {str(r["id"]) for r in fired})
    seen = _seen_runs(folder / EVENTS_FILE, [r["run_id"] for r in fired if r.get("run_id")])
    rows = []
    for record in fired:
        mine = None if seen is None else seen.get(record.get("run_id") or "")
        rows.append(classify(record, gold[str(record["id"])], mine))
    return {"folder": str(folder), "dataset": run.get("dataset"), "questions": len(records), "fired": len(fired),
            "event_log": seen is not None, "commits": sorted({str(r.get("code")) for r in records}), "rows": rows}


def _label(row: Record) -> str:
    """The row's line in a table: its category, and for one that needs the log, what the record tells."""
    return f"{NEEDS_LOG} ({row['note']})" if row["category"] == NEEDS_LOG else row["category"]


def table(rows: Sequence[Record], questions: int) -> Record:
    """Counts and shares (of the questions where it fired) per category, with how many changed the answer."""
    counts = Counter(_label(r) for r in rows)
    changed = Counter(_label(r) for r in rows if r.get("changed"))
    wrong = sum(1 for r in rows if r["category"] not in (BROKEN, STAYED_RIGHT, UNKNOWN))
    order = {c: i for i, c in enumerate(CATEGORIES)}
    labels = sorted(counts, key=lambda label: (order.get(label.split(" (")[0], len(order)), label))
    # "never retrieved" counts a question missing one gold paragraph of several; these miss every one
    nothing = sum(1 for r in rows if r["category"] == NOT_RETRIEVED and str(r.get("gold_retrieved")).startswith("0/"))
    return {"questions": questions, "fired": len(rows), "wrong_without": wrong, "none_retrieved": nothing,
            "categories": {c: {"count": counts[c], "share": counts[c] / len(rows) if rows else None,
                               "changed": changed[c]} for c in labels}}


def repairs(folders: Sequence[Path], method: str = "reagent-both") -> Record:
    """The report over run folders: a table per dataset, one pooled, and the rows."""
    runs = [folder_rows(f, method) for f in folders]
    by_dataset: dict[str, list[Record]] = {}
    for run in runs:
        by_dataset.setdefault(str(run["dataset"]), []).append(run)
    tables = {name: table([r for run in group for r in run["rows"]], sum(run["questions"] for run in group))
              for name, group in by_dataset.items()}
    pooled = table([r for run in runs for r in run["rows"]], sum(run["questions"] for run in runs))
    return {"method": method, "folders": [{k: v for k, v in run.items() if k != "rows"} for run in runs],
            "tables": tables, "pooled": pooled, "rows": [r for run in runs for r in run["rows"]]}

