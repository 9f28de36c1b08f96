"""`reagent bench`: run benchmark methods on a dataset file, and re-render a run's report."""

from __future__ import annotations

from pathlib import Path

import click

from ..bench import DEFAULT_METHODS, METHODS, run_benchmark, write_report
from ..bench.registry import ablated
from ..datasets import DATASETS
from .common import config_from, info, ray_option, ray_target, refuse_without_ray


@click.group(name="bench")
def bench() -> None:
    """Benchmarks: HotpotQA, 2WikiMultiHopQA and MuSiQue in the open-corpus setting."""


ALLOW_MIXED = click.option("--allow-mixed", is_flag=True,
                           help="Accept records of several commits, configurations or machines in one table or "
                                "comparison (it is then labelled).")


def _split_methods(values: tuple[str, ...]) -> list[str]:
    names = [name.strip() for value in values for name in value.split(",") if name.strip()]
    return names or list(DEFAULT_METHODS)


@bench.command(name="run")
@click.option("--dataset", type=click.Choice(DATASETS), required=True, help="Which benchmark the file belongs to.")
@click.option("--file", "file", type=click.Path(exists=True, dir_okay=False, path_type=Path), required=True,
              help="The official dev file (or a sample of it).")
@click.option("--ids", "ids_file", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="Keep only these questions: a file of ids, one a line (# comments allowed), e.g. a split file.")
@click.option("--exclude-ids", "exclude_file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              default=None, help="Drop these questions (same file format); combinable with --ids.")
@click.option("--n", type=int, default=None, help="Questions to draw, after the id filters (default: all, in file order).")
@click.option("--seed", type=int, default=13, show_default=True,
              help="Sampling seed: random.Random(seed).sample(filtered questions, n).")
@click.option("--methods", multiple=True, metavar="A,B,...",
              help=f"Methods to compare (default: {','.join(DEFAULT_METHODS)}; known: {','.join(METHODS)}).")
@click.option("--rules", default=None, metavar="SPEC",
              help="Question-shape rules for the ReAgent methods: 'all', names, '-NAME' to switch one off "
                   "(default: pipeline.rules; `reagent rules` lists them).")
@click.option("--ablate", multiple=True, metavar="RULE",
              help="Also run each ReAgent method without RULE (as reagent-<mode>-no-RULE); repeatable.")
@click.option("--model", default=None, help="Model name from `reagent models list`, or a .gguf path.")
@click.option("--index", "index_name", default=None, metavar="NAME",
              help="Answer over this prebuilt index (`reagent index list`) instead of the file's open-corpus index.")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Run folder (default: <home>/bench-runs/<dataset>[-ids-<stem>][-minus-<stem>][-index-<name>]-<model>-n<N>-seed<S>).")
@click.option("--resume", is_flag=True, help="Continue the run in --out, skipping finished questions.")
@click.option("--local", is_flag=True,
              help="Load the model in this process even when a `reagent serve` of this home could make the calls.")
@ALLOW_MIXED
@ray_option
@click.option("--ray-threads", type=int, default=None, metavar="N",
              help="With --ray: llama.cpp threads (and CPUs) per worker, each holding one model [default: 1].")
@click.option("--ray-workers", type=int, default=None, metavar="N",
              help="With --ray: workers [default: the cluster's CPUs / --ray-threads].")
def run_cmd(dataset: str, file: Path, ids_file: Path | None, exclude_file: Path | None, n: int | None, seed: int,
            methods: tuple[str, ...], rules: str | None, ablate: tuple[str, ...], model: str | None,
            index_name: str | None, out: Path | None, resume: bool, local: bool, allow_mixed: bool,
            ray_address: str | None, ray_threads: int | None, ray_workers: int | None) -> None:
    """Answer N sampled questions with each method; write records, summary.json, results.md, chart.png.

    Questions are filtered by --ids / --exclude-ids first, then --n are drawn with --seed.
    With --ray, Ray workers answer the questions (one model each); records land in the
    same run folder, in the same format, and --resume works.
    """
    from rich.console import Console

    config = config_from(llm__model=model, pipeline__rules=rules, llm__use_server=False if local else None)
    chosen = ablated(_split_methods(methods), [r.strip() for value in ablate for r in value.split(",") if r.strip()])
    options = dict(n=n, seed=seed, methods=chosen, out=out, resume=resume, console=Console(stderr=True), ids=ids_file,
                   exclude_ids=exclude_file, index=index_name, allow_mixed=allow_mixed)
    if ray_address is None:
        refuse_without_ray(ray_threads=ray_threads, ray_workers=ray_workers)
        outcome = run_benchmark(dataset, file, config=config, **options)
    else:
        from ..cluster import run_benchmark_ray

        notes: list[str] = []
        outcome = run_benchmark_ray(dataset, file, config=config, address=ray_target(ray_address),
                                    threads=ray_threads or 1, workers=ray_workers, notes=notes, **options)
        for note in notes:
            info(note)
    if outcome.dropped_torn_line:
        info("dropped a partly written last record (the run was killed while writing it); it was redone")
    info(f"{outcome.new_records} new records, {outcome.resumed_records} kept from before")
    click.echo((outcome.folder / "results.md").read_text(encoding="utf-8"))
    click.echo(f"run folder: {outcome.folder}")


@bench.command(name="report")
@click.argument("folder", type=click.Path(exists=True, file_okay=False, path_type=Path))
@ALLOW_MIXED
def report_cmd(folder: Path, allow_mixed: bool) -> None:
    """Re-render summary.json, results.md and chart.png of a run folder from its records."""
    write_report(folder, allow_mixed=allow_mixed)
    click.echo((folder / "results.md").read_text(encoding="utf-8"))


@bench.command(name="compare")
@click.argument("folders", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--methods", "methods", default=None, metavar="A,B",
              help="Two methods of the given folders (pooled); or one method, taken from each of two folders.")
@click.option("--method", "method", default=None, metavar="NAME", help="The method of both folders (as --methods NAME).")
@click.option("--resamples", type=int, default=10_000, show_default=True, help="Bootstrap resamples.")
@click.option("--seed", type=int, default=0, show_default=True, help="Bootstrap seed.")
@click.option("--json", "as_json", is_flag=True, help="Print the comparison as JSON.")
@ALLOW_MIXED
def compare_cmd(folders: tuple[Path, ...], methods: str | None, method: str | None, resamples: int, seed: int,
                as_json: bool, allow_mixed: bool) -> None:
    """Paired comparison on the same questions: RUN_A RUN_B, or RUN... --methods A,B.

    F1 and EM differences (A - B) with a paired bootstrap 95% interval, won/lost/tied by F1
    with a sign test, fixed/broken by EM; overall, by dataset and by question type. A side
    may pool folders joined by commas (runs/a-hotpotqa,runs/a-2wiki).
    """
    import json

    from ..bench.compare_view import comparison, markdown

    if methods and method:
        raise click.UsageError("pass --methods A,B or --method NAME, not both")
    names = [m.strip() for m in (methods or method or "").split(",") if m.strip()]
    result = comparison(list(folders), names, allow_mixed=allow_mixed, resamples=resamples, seed=seed)
    click.echo(json.dumps(result, indent=2, ensure_ascii=False) if as_json else markdown(result), nl=as_json)


@bench.command(name="profile")
@click.argument("folder", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--method", "methods", multiple=True, metavar="NAME", help="Only this method (repeatable; default: all).")
@click.option("--json", "as_json", is_flag=True, help="Print the profile as JSON.")
def profile_cmd(folder: Path, methods: tuple[str, ...], as_json: bool) -> None:
    """Where a run's time and model calls go: by role, by conflict signal, and the events of its log."""
    import json

    from ..bench.profile import profile_run
    from ..bench.profile_view import markdown

    profile = profile_run(folder, list(methods))
    click.echo(json.dumps(profile, indent=2, ensure_ascii=False) if as_json else markdown(profile), nl=as_json)


@bench.command(name="repairs")
@click.argument("folders", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--method", default="reagent-both", show_default=True, help="The method whose backtracking to sort.")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Also write the report (Markdown, or JSON with --json) to this file.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def repairs_cmd(folders: tuple[Path, ...], method: str, out: Path | None, as_json: bool) -> None:
    """Why repairs fail: each question where backtracking fired, sorted into one category.

    Repaired, broken, right before and after, or the first failure along its chain: gold
    evidence never retrieved, retrieved but not cited, reached but not chosen, the plan too
    short, a step's answer wrong (docs/repairs.md defines each). FOLDERS are `bench run`
    folders (repeated, or joined by commas); the retrieval and step checks need the folder's
    events.duckdb, the dataset file its config.json names gives the gold support and steps.
    """
    import json

    from ..bench.repairs import repairs
    from ..bench.repairs_view import markdown
    from ..bench.sides import split_folders

    report = repairs([part for value in folders for part in split_folders(value)], method)
    text = json.dumps(report, indent=2, ensure_ascii=False) + "\n" if as_json else markdown(report)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text, encoding="utf-8")
    click.echo(text, nl=False)


@bench.command(name="targets")
@click.argument("folders", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--method", default="reagent-both", show_default=True, help="The method held to the targets.")
@click.option("--baselines", default="rag,ircot", show_default=True, metavar="A,B",
              help="The methods it must beat on each dataset (the better of them, by F1).")
@click.option("--time", "time_folders", multiple=True, type=click.Path(path_type=Path), metavar="RUN",
              help="Quiet runs of the method alone, for the time targets (repeatable, or joined by commas).")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Also write the report (Markdown, or JSON with --json) to this file.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@ALLOW_MIXED
def targets_cmd(folders: tuple[Path, ...], method: str, baselines: str, time_folders: tuple[Path, ...],
                out: Path | None, as_json: bool, allow_mixed: bool) -> None:
    """Whether a run meets the targets of backtracking, trust, the baselines, calls and time.

    FOLDERS are `bench run` folders (one per dataset, repeated or joined by commas) holding the
    method and the baselines. Each target is met or missed, with its number and, for a
    difference, the paired bootstrap interval (bench/targets.py defines each; docs/benchmarks.md, "Current results").
    """
    import json

    from ..bench.sides import split_folders
    from ..bench.targets import read_targets
    from ..bench.targets_view import markdown

    names = [name.strip() for name in baselines.split(",") if name.strip()]
    report = read_targets([part for value in folders for part in split_folders(value)], method=method,
                          baselines=names, allow_mixed=allow_mixed,
                          time_folders=[part for value in time_folders for part in split_folders(value)])
    text = json.dumps(report, indent=2, ensure_ascii=False) + "\n" if as_json else markdown(report)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text, encoding="utf-8")
    click.echo(text, nl=False)


@bench.command(name="tables")
@click.argument("folders", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False, path_type=Path))
@ALLOW_MIXED
def tables_cmd(folders: tuple[Path, ...], allow_mixed: bool) -> None:
    """Result tables (docs/benchmarks.md): one per run folder, one row per method, with the commit of its records."""
    from ..bench.tables import tables

    click.echo(tables(list(folders), allow_mixed=allow_mixed), nl=False)


@bench.command(name="noise")
@click.option("--dataset", type=click.Choice(DATASETS), required=True, help="Which benchmark the file belongs to.")
@click.option("--file", "file", type=click.Path(exists=True, dir_okay=False, path_type=Path), required=True,
              help="The dataset file.")
@click.option("--ids", "ids_file", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="Keep only these questions (a file of ids, one a line), e.g. a dev split.")
@click.option("--n", type=int, default=20, show_default=True, help="Questions to draw after the id filter.")
@click.option("--seed", type=int, default=13, show_default=True, help="Sampling seed.")
@click.option("--method", default="rag", show_default=True, help="The method that answers (rag: one call a question).")
@click.option("--threads", default="1,2", show_default=True, metavar="A,B", help="The two llama.cpp thread counts.")
@click.option("--model", default=None, help="Model name from `reagent models list`, or a .gguf path.")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="Folder for the two runs (threads-A/, threads-B/; resumed when there).")
@click.option("--write", "write", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Also write the result JSON here (the package ships reagent_local/bench/noise.json).")
def noise_cmd(dataset: str, file: Path, ids_file: Path | None, n: int, seed: int, method: str, threads: str,
              model: str | None, out: Path, write: Path | None) -> None:
    """The noise floor: answer the same questions with two thread counts and count the answers that change.

    `bench compare` prints the shipped measurement beside every difference.
    """
    import json

    from rich.console import Console

    from ..bench.noise import measure_noise, noise_line

    try:
        counts = [int(t) for t in threads.split(",") if t.strip()]
    except ValueError:
        raise click.UsageError(f"--threads takes two numbers such as 1,2, not {threads!r}") from None
    config = config_from(llm__model=model, llm__use_server=False)
    result = measure_noise(dataset, file, config=config, out=out, method=method, threads=counts, n=n, seed=seed,
                           ids=ids_file, console=Console(stderr=True), write=write)
    click.echo(json.dumps(result, indent=2, ensure_ascii=False))
    info(noise_line(result) or "")


def _router_kind(ctx: click.Context, param: click.Parameter, value: str) -> str:
    """``--kind``: adaptive; the removed agents' router (reagent) is named as removed, not merely unknown."""
    if value == "reagent":
        raise click.BadParameter("the agents' learned router was removed on 2026-12-07 (it lost on dev: "
                                 "docs/changelog.md); only --kind adaptive remains")
    if value != "adaptive":
        raise click.BadParameter(f"{value!r} is not a router kind; the one kind is adaptive")
    return value


@bench.command(name="fit-router")
@click.argument("folders", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--kind", default="adaptive", show_default=True, callback=_router_kind,
              help="adaptive: from rag and ircot records (the only kind since the agents' router was removed).")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Router file to write (default: the package's, which the adaptive method reads).")
@click.option("--report", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Also write the fit as Markdown here (the policy against each road alone, the weights).")
@click.option("--folds", type=int, default=5, show_default=True, help="Cross-validation folds.")
@click.option("--seed", type=int, default=13, show_default=True, help="Seed of the folds.")
def fit_router_cmd(folders: tuple[Path, ...], kind: str, out: Path | None, report: Path | None, folds: int,
                   seed: int) -> None:
    """Fit the adaptive baseline's router (stop after RAG? which answer stands?) from train run folders.

    Fit on train questions only (`--ids ../shared/data/splits/DATASET-train.txt`); judge on dev.
    """
    import shlex
    import sys

    from ..agents.router import default_path, write_router
    from ..bench.fit_router import fit_folders, render_fit

    command = "reagent bench fit-router " + " ".join(shlex.quote(a) for a in sys.argv[3:])
    fit = fit_folders(list(folders), kind, folds=folds, seed=seed, command=command)
    target = out or default_path(kind)
    write_router(fit.router, target)
    _show_fit(render_fit(fit), report, f"router written to {target}")


@bench.command(name="fit-trust")
@click.argument("folders", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--judge", "judged", multiple=True, type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="A run folder (dev) to judge the fitted score on: AUROC and selective accuracy (repeatable).")
@click.option("--method", default=None,
              help="The records to read (default: reagent-both, else reagent-collect, whichever a folder has).")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Trust model file to write (default: the package's, which every run reads).")
@click.option("--report", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Also write the fit as Markdown here (CV figures, the judged runs, the weights).")
@click.option("--target", type=float, default=0.70, show_default=True,
              help="The EM the trusted answers should reach (out of fold on train): it sets the threshold.")
@click.option("--folds", type=int, default=5, show_default=True, help="Cross-validation folds.")
@click.option("--seed", type=int, default=13, show_default=True, help="Seed of the folds.")
@click.option("--against", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="A trust model file to judge on the same --judge runs (e.g. the package's, before --out "
                   "replaces it), so that a refit is weighed against it on the same answers.")
def fit_trust_cmd(folders: tuple[Path, ...], judged: tuple[Path, ...], method: str | None, out: Path | None,
                  report: Path | None, target: float, folds: int, seed: int, against: Path | None) -> None:
    """Fit the answers' trust score (the probability an answer is right) from train run folders.

    Fit on train questions only (`--ids ../shared/data/splits/DATASET-train.txt`); judge on dev with --judge.
    """
    import shlex
    import sys

    from ..agents.trust import TRUST_PATH, load_trust_model, write_trust_model
    from ..bench.fit_trust import fit_folders, render_fit

    if against is not None and not judged:
        raise click.UsageError("--against weighs the refit on the --judge runs: give at least one --judge")
    command = "reagent bench fit-trust " + " ".join(shlex.quote(a) for a in sys.argv[3:])
    fit = fit_folders(list(folders), judge_folders=list(judged), method=method, folds=folds, seed=seed,
                      target=target, command=command,
                      against=(str(against), load_trust_model(against)) if against is not None else None)
    where = out or TRUST_PATH
    write_trust_model(fit.model, where)
    _show_fit(render_fit(fit), report, f"trust model written to {where}")


def _show_fit(text: str, report: Path | None, written: str) -> None:
    """A fit's report printed (and written to ``report``), then where the fitted file went."""
    if report is not None:
        report.parent.mkdir(parents=True, exist_ok=True)
        report.write_text(text, encoding="utf-8")
    click.echo(text)
    click.echo(written)


@bench.command(name="ablate")
@click.argument("baselines", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--what", "whats", multiple=True, required=True, metavar="SPEC",
              help="What to switch off (repeatable): rule:NAME, setting:SECTION.FIELD=VALUE "
                   "(e.g. setting:pipeline.two_roads=false) or method:NAME (e.g. method:reagent-local).")
@click.option("--method", default="reagent-both", show_default=True, help="The baseline folders' method to ablate.")
@click.option("--check", type=int, default=0, show_default=True, metavar="N",
              help="Also answer N carried-over questions per baseline again (seeded) and report any difference.")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Folder for the reruns and ablation.md (default: 'ablations' beside the first baseline).")
@click.option("--resume", is_flag=True, help="Continue the reruns already in --out.")
@click.option("--resamples", type=int, default=10_000, show_default=True, help="Bootstrap resamples.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object per ablation, one a line.")
@ALLOW_MIXED
@click.option("--answered-only", is_flag=True,
              help="Accept baselines stopped before their last question: ablate the questions they answered "
                   "(the tables say how many of how many drawn).")
@ray_option
@click.option("--ray-threads", type=int, default=None, metavar="N",
              help="With --ray: llama.cpp threads (and CPUs) per worker, each holding one model [default: 1].")
@click.option("--ray-workers", type=int, default=None, metavar="N",
              help="With --ray: workers [default: the cluster's CPUs / --ray-threads].")
def ablate_cmd(baselines: tuple[Path, ...], whats: tuple[str, ...], method: str, check: int, out: Path | None,
               resume: bool, resamples: int, as_json: bool, allow_mixed: bool, answered_only: bool,
               ray_address: str | None,
               ray_threads: int | None, ray_workers: int | None) -> None:
    """What each rule, setting or backtracking kind adds, paired over every question of the baseline runs.

    BASELINES are `bench run` folders (one per dataset; repeated or joined by commas), at this
    commit. Only the questions where the ablated part acted in the baseline are answered again,
    into OUT/<spec>/<folder name>/; the others are carried over from the baseline (a deterministic
    run gives them the identical record; --check N shows it). Differences are baseline - ablated,
    per folder and pooled; the summary table is also written to OUT/ablation.md. With --ray,
    Ray workers answer each baseline's reruns in parallel (one model each).
    """
    import json
    from contextlib import nullcontext

    from rich.console import Console

    from ..bench.ablate import run_ablations
    from ..bench.ablate_view import markdown, markdown_summary
    from ..bench.sides import split_folders

    def show(result: dict) -> None:
        click.echo(json.dumps(result, ensure_ascii=False) if as_json else markdown(result))

    folders = [part for value in baselines for part in split_folders(value)]
    notes: list[str] = []
    if ray_address is None:
        refuse_without_ray(ray_threads=ray_threads, ray_workers=ray_workers)
        session = nullcontext(None)
    else:
        from ..cluster.connect import ray_session

        session = ray_session(ray_target(ray_address))
    with session as ray:
        answer_all = None
        if ray is not None:
            from ..cluster.bench import ray_answer_all

            answer_all = ray_answer_all(ray, threads=ray_threads or 1, workers=ray_workers, notes=notes)
        results = run_ablations(folders, list(whats), method=method, check=check, out=out, resume=resume,
                                allow_mixed=allow_mixed, answered_only=answered_only, resamples=resamples,
                                console=Console(stderr=True), say=info,
                                on_result=show, answer_all=answer_all)
    for note in notes:
        info(note)
    if not as_json:
        click.echo(markdown_summary(results), nl=False)
    info(f"ablation folder: {Path(results[0]['folder']).parent}")
