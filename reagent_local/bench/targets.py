"""The targets of issue 49 (backtracking that repairs) and 51 (time), checked from run folders.

``reagent bench targets RUN... [--time QUIET_RUN...]`` reads a confirm run's records (ReAgent with
backtracking and the two baselines, one folder per dataset) and says of every target whether it is
met, with the number and, for a difference, its paired bootstrap interval. So the reading of a
confirm run is one command, the same for every reader, and not a sum done by hand:

- **repairs**: of the wrong answers backtracking caught (it fired, and the answer without it was
  wrong), at least a third repaired (right with it, by EM); broken answers (right without, wrong
  with) at most a third of the repaired;
- **both - none**: F1 with backtracking minus F1 without (the answer a ``reagent-none`` run gives,
  from the method's own records), pooled, at least +.03 with its interval above zero;
- **trust**: the trusted answers right (EM) at least 70% of the time, covering at least half the
  questions, and the AUROC of the trust score at least .75;
- **against the baselines**: on each dataset, the method's F1 at least .03 above the better of the
  baselines (by F1 on that dataset's paired questions);
- **cost**: median LLM calls at most 6; on the questions where backtracking fired, at most 2.5 times
  the calls the answer without it takes (the run's calls against the shadow run's, replayed ones
  counted: what ``reagent-none`` would have made);
- **time** (with ``--time``, quiet runs of the method alone): median at most 15 s and p90 at most
  40 s on every dataset.

Pure functions over record dicts; ``targets_view`` renders them.
"""

from __future__ import annotations

from statistics import mean
from typing import Any, Mapping, Sequence

from .compare import em_without, record_backtracked
from .compare_view import diff_text, score_text
from .paired import paired_stats
from .selective import trust_summary
from .stats import median, p90

Record = dict[str, Any]

REPAIRED_SHARE = 1 / 3  # of the caught wrong answers
BROKEN_PER_REPAIRED = 1 / 3
BOTH_MINUS_NONE = 0.03
TRUSTED_EM, TRUSTED_COVERAGE, TRUST_AUROC = 0.70, 0.50, 0.75
OVER_BASELINE = 0.03
MEDIAN_CALLS, CALLS_RATIO = 6, 2.5
MEDIAN_SECONDS, P90_SECONDS = 15.0, 40.0


def _row(target: str, scope: str, value: str, need: str, met: bool | None, detail: str = "") -> Record:
    return {"target": target, "scope": scope, "value": value, "need": need, "met": met, "detail": detail}


def by_dataset(records: Sequence[Record]) -> dict[str, list[Record]]:
    """Records grouped by dataset, in the order the datasets first appear."""
    out: dict[str, list[Record]] = {}
    for record in records:
        out.setdefault(str(record.get("dataset") or "-"), []).append(record)
    return out


def repair_counts(records: Sequence[Record]) -> Record:
    """Fired, caught (fired on a wrong answer without backtracking), repaired and broken, by EM."""
    fired = [r for r in records if record_backtracked(r) and em_without(r) is not None]
    caught = [r for r in fired if em_without(r) < 1]
    return {"fired": len(fired), "caught": len(caught),
            "repaired": sum(1 for r in caught if r["em"] >= 1),
            "broken": sum(1 for r in fired if em_without(r) >= 1 and r["em"] < 1)}


def repairs_row(records: Sequence[Record], scope: str) -> Record:
    c = repair_counts(records)
    met = c["caught"] > 0 and c["repaired"] >= REPAIRED_SHARE * c["caught"] and \
        c["broken"] <= BROKEN_PER_REPAIRED * c["repaired"]
    share = f" ({c['repaired'] / c['caught']:.0%})" if c["caught"] else ""
    return _row("repairs", scope, f"{c['repaired']} of {c['caught']} caught repaired{share}, {c['broken']} broken",
                "repaired >= 1/3 of caught, broken <= 1/3 of repaired", met if c["caught"] else None,
                f"fired on {c['fired']} of {len(records)}")


def without_row(records: Sequence[Record], scope: str) -> Record:
    need = f"F1 >= +{BOTH_MINUS_NONE:.2f}, interval above 0"
    known = [r for r in records if r.get("f1_without_backtracking") is not None]
    if not known:
        return _row("both - none", scope, "-", need, None, "the records carry no answer without backtracking")
    # each record paired with its own answer without backtracking, as `bench compare` pairs two methods
    s = paired_stats([(r, {"id": r["id"], "f1": r["f1_without_backtracking"], "em": r["em_without_backtracking"] or 0})
                      for r in known])
    bounds = s["f1_interval"]
    met = s["f1_diff"] >= BOTH_MINUS_NONE and bounds is not None and bounds[0] > 0
    detail = (f"{len(known)} questions; EM / F1 {score_text(s['em_a'])} / {score_text(s['f1_a'])} with, "
              f"{score_text(s['em_b'])} / {score_text(s['f1_b'])} without")
    return _row("both - none", scope, diff_text(s["f1_diff"], bounds), need, met, detail)


def trust_row(records: Sequence[Record], scope: str) -> Record:
    t = trust_summary(records)
    need = f"EM of trusted >= {TRUSTED_EM:.2f}, coverage >= {TRUSTED_COVERAGE:.2f}, AUROC >= {TRUST_AUROC:.2f}"
    if t is None:
        return _row("trust", scope, "-", need, None, "the records carry no trust score")
    em, coverage, area = t["em_trusted"], t["coverage"], t["auroc"]
    met = em is not None and area is not None and em >= TRUSTED_EM and coverage >= TRUSTED_COVERAGE \
        and area >= TRUST_AUROC
    value = (f"EM of trusted {'-' if em is None else f'{em:.3f}'}, coverage {coverage:.3f}, "
             f"AUROC {'-' if area is None else f'{area:.3f}'}")
    return _row("trust", scope, value, need, met, f"{t['trusted']} of {t['n']} trusted")


def baseline_row(mine: Sequence[Record], baselines: Mapping[str, Sequence[Record]], scope: str) -> Record:
    """The method against the better baseline (by mean F1 over the questions all of them answered)."""
    ids = {r["id"] for r in mine}
    for records in baselines.values():
        ids &= {r["id"] for r in records}
    need = f"F1 >= +{OVER_BASELINE:.2f} over the better baseline"
    if not ids or not baselines:
        return _row("over the baselines", scope, "-", need, None, "no question answered by every method")
    theirs = {name: {r["id"]: r for r in records if r["id"] in ids} for name, records in baselines.items()}
    f1 = {name: mean(float(r["f1"]) for r in found.values()) for name, found in theirs.items()}
    better = max(f1, key=f1.__getitem__)
    s = paired_stats([(r, theirs[better][r["id"]]) for r in mine if r["id"] in ids])
    others = ", ".join(f"{name} {score_text(value)}" for name, value in f1.items())
    return _row("over the baselines", scope, diff_text(s["f1_diff"], s["f1_interval"]) + f" against {better}", need,
                s["f1_diff"] >= OVER_BASELINE, f"{s['questions']} questions; F1 {others}")


def none_calls(record: Record) -> int:
    """The calls the answer without backtracking takes: the shadow run's own and replayed calls; the run's
    own calls when nothing fired (the paths never parted)."""
    cost = record.get("without_backtracking_cost")
    if isinstance(cost, Mapping) and (cost.get("calls") or cost.get("replayed")):
        return int(cost.get("calls") or 0) + int(cost.get("replayed") or 0)
    return int(record.get("llm_calls") or 0)


def cost_rows(records: Sequence[Record], scope: str) -> list[Record]:
    calls = [int(r.get("llm_calls") or 0) for r in records]
    mid = median(calls)
    rows = [_row("median calls", scope, "-" if mid is None else f"{mid:g}", f"<= {MEDIAN_CALLS}",
                 None if mid is None else mid <= MEDIAN_CALLS)]
    fired = [r for r in records if record_backtracked(r)]
    base = sum(none_calls(r) for r in fired)
    if not fired or not base:
        rows.append(_row("calls where it fired", scope, "-", f"<= {CALLS_RATIO}x none's", None, "it never fired"))
        return rows
    made = sum(int(r.get("llm_calls") or 0) for r in fired)
    rows.append(_row("calls where it fired", scope, f"{made / base:.2f}x none's", f"<= {CALLS_RATIO}x none's",
                     made / base <= CALLS_RATIO, f"{len(fired)} questions: {made} calls against {base}"))
    return rows


def time_rows(records: Sequence[Record]) -> list[Record]:
    rows = []
    for dataset, group in by_dataset(records).items():
        seconds = [float(r["seconds"]) for r in group if r.get("seconds") is not None and not r.get("error")]
        mid, high = median(seconds), p90(seconds)
        met = None if mid is None else mid <= MEDIAN_SECONDS and high <= P90_SECONDS
        value = "-" if mid is None else f"median {mid:.1f} s, p90 {high:.1f} s"
        rows.append(_row("time", dataset, value, f"median <= {MEDIAN_SECONDS:g} s, p90 <= {P90_SECONDS:g} s", met,
                         f"{len(seconds)} questions"))
    return rows


def check_targets(mine: Sequence[Record], baselines: Mapping[str, Sequence[Record]],
                  timed: Sequence[Record] = ()) -> list[Record]:
    """Every target's row: pooled where the issue pools, per dataset where it asks for each set."""
    rows = [repairs_row(mine, "pooled"), without_row(mine, "pooled")]
    sets = by_dataset(mine)
    if len(sets) > 1:  # each set's share of the pooled difference, for reading (the target is pooled)
        rows += [{**without_row(group, dataset), "need": "(pooled target)", "met": None}
                 for dataset, group in sets.items()]
    rows.append(trust_row(mine, "pooled"))
    theirs = {name: by_dataset(records) for name, records in baselines.items()}
    for dataset, group in sets.items():
        rows.append(baseline_row(group, {name: by_set.get(dataset, []) for name, by_set in theirs.items()}, dataset))
    rows += cost_rows(mine, "pooled")
    return rows + time_rows(timed)


def read_targets(folders: Sequence[Any], *, method: str = "reagent-both", baselines: Sequence[str] = ("rag", "ircot"),
                 time_folders: Sequence[Any] = (), allow_mixed: bool = False) -> Record:
    """The targets checked over run folders: the method's and the baselines' records (one commit, configuration
    and machine each, all on one machine unless ``allow_mixed``), and the method's quiet runs for the time."""
    from .provenance import check_one_machine
    from .sides import load_side

    mine = load_side(folders, method, allow_mixed=allow_mixed)
    theirs = {name: load_side(folders, name, allow_mixed=allow_mixed) for name in baselines}
    timed = load_side(time_folders, method, allow_mixed=allow_mixed) if time_folders else None
    sides = {method: mine.origin, **{name: side.origin for name, side in theirs.items()}}
    if timed is not None:
        sides[f"{method} (time)"] = timed.origin
    mixed = check_one_machine(sides, "these targets", allow_mixed=allow_mixed)
    return {"method": method, "folders": [str(f) for f in folders], "time_folders": [str(f) for f in time_folders],
            "origins": sides, "mixed": mixed,
            "rows": check_targets(mine.records, {name: side.records for name, side in theirs.items()},
                                  timed.records if timed is not None else ())}
