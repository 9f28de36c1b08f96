"""`reagent bench conversation`: MuSiQue 2-hop questions asked whole and as a first hop then a follow-up."""

from __future__ import annotations

from pathlib import Path

import click

from .common import config_from, info


@click.command(name="conversation")
@click.option("--file", "file", type=click.Path(exists=True, dir_okay=False, path_type=Path), required=True,
              help="A MuSiQue file (musique_ans_*.jsonl): its question_decomposition makes the two turns.")
@click.option("--ids", "ids_file", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="Only these question ids (one per line), in file order.")
@click.option("--n", type=int, default=None, help="The first N questions after the filter (default: all).")
@click.option("--model", default=None, help="Model name from `reagent models list`, or a .gguf path.")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Run folder (default: <home>/bench-runs/conversation-musique-n<N>).")
@click.option("--resume", is_flag=True, help="Continue the run in --out, skipping finished questions.")
@click.option("--report-only", is_flag=True, help="Write report.md from the records in --out so far, and answer nothing.")
def conversation(file: Path, ids_file: Path | None, n: int | None, model: str | None, out: Path | None,
                 resume: bool, report_only: bool) -> None:
    """Answer each question whole, then as two turns (the follow-up rewritten first); write report.md.

    Turn 1 is the first decomposition step; turn 2 the second, pointing back ("And who is their
    father?") instead of naming the first answer (reagent_local/bench/conversation.py says how).
    The answers come from the file's open-corpus index, as `reagent bench run --dataset musique`.
    """
    from ..bench.conversation import REPORT, build_two_turns, read_records, run_conversation_bench, write_report
    from ..bench.runner import benchmark_index
    from ..bench.selection import read_ids_file
    from ..core.log import EventLog
    from ..reasoning.wiring import build_pipeline

    config = config_from(llm__model=model, llm__use_server=False)
    ids = read_ids_file(ids_file).ids if ids_file else None
    items = build_two_turns(file, ids, n)
    folder = out or Path(config.paths.home) / "bench-runs" / f"conversation-musique-n{n or len(items)}"
    if report_only:
        summary = write_report(folder, read_records(folder))
        click.echo((folder / REPORT).read_text(encoding="utf-8").split("\n\n| id |")[0])
        info(f"report: {folder / REPORT} ({summary['questions']} of {len(items)} questions)")
        return
    folder.mkdir(parents=True, exist_ok=True)
    info(f"{len(items)} questions, three runs each (whole, turn 1, follow-up) -> {folder}")
    index = benchmark_index("musique", file, config)()
    with EventLog(folder / "events.duckdb") as log:
        pipeline = build_pipeline(config, index=index, log=log)

        def tell(record: dict) -> None:
            info(f"{record['id']}: one turn {record['one_turn']['answer']!r} ({record['one_turn']['f1']:.2f}), "
                 f"follow-up read as {record['follow_up_run']['rewritten']!r} -> {record['follow_up_run']['answer']!r} "
                 f"({record['follow_up_run']['f1']:.2f})")

        try:
            summary = run_conversation_bench(pipeline, items, folder, resume=resume, on_record=tell)
        finally:
            index.close()
    click.echo((folder / REPORT).read_text(encoding="utf-8").split("\n\n| id |")[0])
    info(f"report: {folder / REPORT} ({summary['questions']} questions)")
