"""The noise floor: how many answers change when nothing but llama.cpp's thread count does.

``measure_noise`` answers the same questions once per thread count (1 and 2 by default) with one
method, through the usual benchmark runner (one run folder per count, resumable), and counts the
questions whose answer differs: exactly, and after the official answer normalisation. A thread
count changes how llama.cpp splits its sums, so a close choice at temperature 0 can flip; a
difference between two methods smaller than this is not told apart from it.

The result is a small JSON with the machine it was measured on. The package ships one
(``noise.json`` beside this module, written by ``reagent bench noise --write``); ``bench compare``
prints it beside every difference (``noise_line``).
"""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Sequence

from ..config import Config
from ..errors import BenchRunError
from ..runtime.identity import describe_machine
from ..version import code_version
from .compare import same_answer
from .records import RECORDS_FILE, read_records
from .rundir import read_run_config

NOISE_FILE = Path(__file__).with_name("noise.json")
THREADS = (1, 2)


def read_noise(path: Path = NOISE_FILE) -> dict[str, Any] | None:
    """The shipped noise measurement, or None when there is none (or it does not read)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and "changed" in data else None


def noise_line(noise: dict[str, Any] | None, machines: Sequence[str] = ()) -> str | None:
    """'Noise floor: between 1 and 2 threads on <cpu>, k of n rag answers changed ...', or None without one.

    ``machines``: the machine ids of the records compared, to say whether the floor was measured on theirs.
    """
    if not noise:
        return None
    machine = noise.get("machine") or {}
    a, b = noise["threads"]
    where = ""
    if machines:
        where = (" (the machine of these records)" if set(machines) == {machine.get("machine_id")}
                 else " (another machine than these records')")
    return (f"Noise floor (`reagent bench noise`, {noise.get('measured', '')[:10]}, commit {noise.get('commit')}): "
            f"between {a} and {b} threads on {describe_machine(machine)}{where}, {noise['changed']} of "
            f"{noise['questions']} {noise['method']} answers changed ({noise['changed_normalised']} after "
            f"normalisation)." + (" A difference of that many answers or fewer may be threads alone."
                                  if noise["changed"] else ""))


def changed_answers(first: Sequence[dict[str, Any]], second: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The questions both answered, and those whose prediction differs: exactly, and after normalisation."""
    theirs = {str(r["id"]): r for r in second}
    paired = [(r, theirs[str(r["id"])]) for r in first if str(r["id"]) in theirs]
    exact = [str(a["id"]) for a, b in paired if a["prediction"] != b["prediction"]]
    normalised = [str(a["id"]) for a, b in paired if not same_answer(a["prediction"], b["prediction"])]
    return {"questions": len(paired), "changed": len(exact), "changed_normalised": len(normalised),
            "changed_ids": exact}


def noise_result(folders: dict[int, Path], method: str) -> dict[str, Any]:
    """The noise JSON from the run folders of two thread counts."""
    if len(folders) != 2:
        raise BenchRunError(f"the noise floor compares two thread counts, got {len(folders)}",
                            hint="pass --threads A,B")
    (a, first), (b, second) = sorted(folders.items())
    records = {t: [r for r in read_records(f / RECORDS_FILE) if r["method"] == method and not r.get("error")]
               for t, f in folders.items()}
    run = read_run_config(first)
    session = run["sessions"][-1]
    return {"what": "answers that change between two llama.cpp thread counts, nothing else changed",
            "method": method, "dataset": run.get("dataset"), "model": run.get("model", {}).get("id"),
            "threads": [a, b], **changed_answers(records[a], records[b]),
            "commit": code_version(), "measured": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "ids": (run.get("ids") or {}).get("file") if isinstance(run.get("ids"), dict) else None,
            "folders": {str(t): str(f) for t, f in folders.items()}, "machine": session.get("machine")}


def measure_noise(dataset: str, file: Path, *, config: Config, out: Path, method: str = "rag",
                  threads: Sequence[int] = THREADS, n: int | None = None, seed: int = 13, ids: Any = None,
                  console: Any = None, write: Path | None = None, llm: Any = None,
                  retriever: Any = None) -> dict[str, Any]:
    """Answer the questions once per thread count into ``out/threads-<N>`` and count the answers that change.

    A folder already there is resumed. ``write``: also save the result there (``NOISE_FILE`` ships it).
    ``llm`` and ``retriever`` replace the configured model and the file's index (fakes, in tests).
    """
    from .runner import run_benchmark

    if len(set(threads)) != 2 or min(threads) < 1:
        raise BenchRunError(f"--threads takes two different counts of 1 or more, got {list(threads)}",
                            hint="pass --threads 1,2")
    folders: dict[int, Path] = {}
    for count in threads:
        folder = Path(out) / f"threads-{count}"
        counted = replace(config, llm=replace(config.llm, n_threads=count))
        run_benchmark(dataset, file, config=counted, n=n, seed=seed, methods=[method], out=folder,
                      resume=(folder / "config.json").exists(), ids=ids, console=console, llm=llm,
                      retriever=retriever)
        folders[count] = folder
    result = noise_result(folders, method)
    if write is not None:
        Path(write).write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return result
