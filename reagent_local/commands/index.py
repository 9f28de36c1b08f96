"""`reagent index`: build, list and inspect retrieval indexes."""

from __future__ import annotations

from pathlib import Path

import click

from ..retrieval.dense import FAISS_TYPES
from ..retrieval.folder_build import DOCS
from ..retrieval.readers import FORMATS
from .common import config_from, echo_json, info, ray_option, ray_target, refuse_without_ray


@click.group(name="index")
def index() -> None:
    """Retrieval indexes: FAISS (dense) + BM25 (sparse) over passages."""


_GLOBS = ("Globs over paths from the folder: without '/' a file or folder name at any depth (*.md, drafts), "
          "with '/' the path (docs/**/*.md). Repeatable.")


@index.command(name="build")
@click.argument("source", type=click.Path(path_type=Path))
@click.option("--name", required=True, help="Index name (letters, digits, -, _, .).")
@click.option("--format", "fmt", type=click.Choice(("auto", DOCS, *FORMATS)), default="auto", show_default=True,
              help="How to read SOURCE: a folder or file of Markdown, text, HTML and PDF documents (docs), a MediaWiki "
                   "dump, JSONL or a JSON array of {title,text}, DPR TSV, or a benchmark file.")
@click.option("--include", multiple=True, metavar="GLOB", help="Folders: read only matching files. " + _GLOBS)
@click.option("--exclude", multiple=True, metavar="GLOB", help="Folders: leave matching files and folders out. " + _GLOBS)
@click.option("--update", is_flag=True,
              help="Folders: bring index NAME up to date (new, changed and deleted files; only new text is embedded).")
@click.option("--limit", type=int, default=None,
              help="Keep only the first N documents (articles, lines, rows, paragraphs, files).")
@click.option("--faiss", "faiss_type", type=click.Choice(FAISS_TYPES), default="auto", show_default=True,
              help="Dense index: exact (flat), approximate graph (hnsw), compressed (ivfpq), or chosen by corpus size.")
@click.option("--no-kg", is_flag=True, help="Do not extract the infobox knowledge graph from a dump.")
@click.option("--force", is_flag=True, help="Replace an existing index of that name.")
@click.option("--quiet", is_flag=True, help="No progress bars.")
@ray_option
@click.option("--shard-size", type=int, default=None, metavar="N",
              help="With --ray: pages of a dump (documents of other formats) per shard [default: 1000].")
@click.option("--ray-workers", type=int, default=None, metavar="N",
              help="With --ray: shard workers (one embedding thread each) [default: the cluster's CPUs].")
def build_cmd(source: Path, name: str, fmt: str, include: tuple[str, ...], exclude: tuple[str, ...], update: bool,
              limit: int | None, faiss_type: str, no_kg: bool, force: bool, quiet: bool, ray_address: str | None,
              shard_size: int | None, ray_workers: int | None) -> None:
    """Build index NAME from SOURCE; an interrupted build resumes when run again.

    SOURCE may be a folder (read recursively; hidden and binary files are skipped, and a
    file that cannot be read is named) or one file of Markdown, text, HTML, PDF, docx,
    pptx, xlsx, csv, odt, epub, ipynb or eml: passages follow headings, pages, slides,
    rows and cells and carry their file, heading and place. With --ray, Ray workers read, chunk and embed
    shards of SOURCE (each kept as it finishes, so a build resumes shard by shard), merged
    into the same index.
    """
    options = dict(fmt=fmt, limit=limit, kg=not no_kg, force=force, progress=not quiet, faiss_type=faiss_type, log=info)
    if include or exclude or update:
        options.update(include=include, exclude=exclude, update=update)
    if ray_address is None:
        refuse_without_ray(shard_size=shard_size, ray_workers=ray_workers)
        from ..retrieval import build_index

        path = build_index(source, name, config_from(), **options)
    else:
        if include or exclude or update or source.is_dir():
            raise click.UsageError("--ray reads dumps and corpus files; build a folder of documents without --ray")
        from ..cluster import build_index_ray

        path = build_index_ray(source, name, config_from(), address=ray_target(ray_address), workers=ray_workers,
                               **({"shard_size": shard_size} if shard_size is not None else {}), **options)
    info(f"built {path}")
    _print_info(name)


@index.command(name="update")
@click.argument("name")
@click.option("--include", multiple=True, metavar="GLOB", help="Replace the recorded include globs. " + _GLOBS)
@click.option("--exclude", multiple=True, metavar="GLOB", help="Replace the recorded exclude globs. " + _GLOBS)
@click.option("--quiet", is_flag=True, help="No progress bars.")
def update_cmd(name: str, include: tuple[str, ...], exclude: tuple[str, ...], quiet: bool) -> None:
    """Bring index NAME up to date with the folder it was built from.

    New files are read, changed ones (by content hash) read again, deleted ones dropped;
    only text the index does not hold yet is embedded. The old index answers until the
    new one is swapped in.
    """
    from ..retrieval import update_index

    path = update_index(name, config_from(), include=include or None, exclude=exclude or None, progress=not quiet,
                        log=info)
    info(f"updated {path}")
    _print_info(name)


@index.command(name="watch")
@click.argument("name")
@click.option("--settle", type=click.FloatRange(min=0.05), default=2.0, show_default=True, metavar="SECONDS",
              help="Quiet time after the last change before updating.")
@click.option("--timeout", type=click.FloatRange(min=0), default=None, metavar="SECONDS",
              help="Stop after this long (scripts and tests); default: until Ctrl-C.")
@click.option("--once", is_flag=True, help="Stop after the first update a change caused.")
@click.option("--poll", is_flag=True, help="Poll for changes instead of the system's notifications (network drives).")
@click.option("--quiet", is_flag=True, help="No progress bars (the update lines are still printed).")
def watch_cmd(name: str, settle: float, timeout: float | None, once: bool, poll: bool, quiet: bool) -> None:
    """Keep index NAME current with its folder: update it whenever files change.

    It updates once at the start, then after each burst of changes has settled, with the
    same safety as `index update` (the old index answers until the new one is swapped in).
    Ctrl-C stops it.
    """
    from ..retrieval.watch import watch_index

    result = watch_index(name, config_from(), settle=settle, timeout=timeout, once=once, poll=poll,
                         progress=not quiet, log=info)
    tail = "" if result.stopped != "interrupted during an update" else \
        f"; the index answers as before the update: `reagent index update {name}` finishes it"
    info(f"stopped watching {name} ({result.stopped}): {result.updates} update{'s' if result.updates != 1 else ''}"
         + (f", {result.failed} failed" if result.failed else "") + tail)


@index.command(name="convert")
@click.argument("base")
@click.option("--name", required=True, help="Name of the new index.")
@click.option("--faiss", "faiss_type", type=click.Choice(FAISS_TYPES), default=None,
              help="The new index's dense type (auto: chosen by corpus size).")
@click.option("--tokenizer", type=click.IntRange(1, 2), default=None,
              help="Rebuild BM25 with this tokenizer version (2 keeps versions, flags, paths and identifiers whole).")
@click.option("--force", is_flag=True, help="Replace an existing index of that name.")
def convert_cmd(base: str, name: str, faiss_type: str | None, tokenizer: int | None, force: bool) -> None:
    """Copy index BASE as NAME with its FAISS part rebuilt from BASE's vectors, or its BM25 part rebuilt
    with another tokenizer from BASE's passages (no re-embedding either way)."""
    from ..retrieval.convert import convert_index

    if faiss_type is None and tokenizer is None:
        raise click.UsageError("pass --faiss TYPE, --tokenizer N or both")
    path = convert_index(base, name, config_from(), faiss_type, tokenizer=tokenizer, force=force, log=info)
    info(f"built {path}")
    _print_info(name)


@index.command(name="list")
@click.option("--json", "as_json", is_flag=True, help="Print the manifests as JSON.")
def list_cmd(as_json: bool) -> None:
    """List the built indexes."""
    from ..retrieval.layout import list_indexes
    from ..retrieval.status import READY, statuses

    config = config_from()
    found = list_indexes(config)
    states = {s.name: s for s in statuses(config)}
    if as_json:
        echo_json([{**m, "state": states[m["name"]].state if m["name"] in states else READY} for m in found]
                  + [{"name": s.name, "state": s.state, "detail": s.detail, "fix": s.fix}
                     for s in states.values() if not s.answers])
        return
    if not states:
        info(f"no indexes under {config.paths.indexes}; build one with `reagent index build SOURCE --name NAME`")
    for m in found:
        status = states.get(m["name"])
        click.echo(f"{m['name']:<48} {m.get('passages', '?'):>9} passages  {m.get('reader', '?'):<8} "
                   f"{m.get('faiss', {}).get('type', '?'):<5} {_size(m['size_bytes']):>9}  {m.get('created', ''):<24}  "
                   f"{status.state if status else READY}")
        if status is not None and status.state != READY:
            info(f"  {m['name']}: {status.line()}")
    for status in states.values():
        if not status.answers:
            click.echo(f"{status.name:<48} {'-':>9} passages  {'':<8} {'':<5} {'':>9}  {'':<24}  {status.state}")
            info(f"  {status.name}: {status.line()}")


@index.command(name="info")
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="Print the manifest as JSON.")
def info_cmd(name: str, as_json: bool) -> None:
    """Show an index's manifest: source, passages, embedder, FAISS type, timings, versions, KG."""
    _print_info(name, as_json)


_KG_SHOWN = 25  # relations listed by `index info`; a dump has hundreds of infobox keys


def _size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def folder_lines(m: dict) -> list[str]:
    """`index info` lines of an index of a folder: files read and skipped, the last update."""
    folder = m.get("folder")
    if not folder:
        return []
    from ..retrieval.folder_scan import REASONS

    skipped = ", ".join(f"{n} {REASONS.get(r, r)}" for r, n in (folder.get("skipped") or {}).items()) or "none"
    globs = "  ".join([*(f"--include {g}" for g in folder.get("include") or ()),
                       *(f"--exclude {g}" for g in folder.get("exclude") or ())])
    out = [f"folder     {folder.get('files')} files read, {folder.get('passages')} passages"
           + (f"  ({globs})" if globs else ""), f"skipped    {skipped}"]
    out += [f"             {s['path']}: {REASONS.get(s['reason'], s['reason'])}" + (f" ({s['detail']})" if s.get("detail") else "")
            for s in folder.get("skipped_files") or [] if s["reason"] != "binary"]
    update = m.get("update")
    if update:
        files, passages = update.get("files") or {}, update.get("passages") or {}
        out.append(f"updated    {files.get('added', 0)} files added, {files.get('changed', 0)} changed, "
                   f"{files.get('deleted', 0)} deleted, {files.get('unchanged', 0)} unchanged; "
                   f"{passages.get('embedded', 0)} passages embedded, {passages.get('vectors_reused', 0)} vectors reused")
    return out


def _print_info(name: str, as_json: bool = False) -> None:
    from ..retrieval.layout import folder_size, read_manifest, resolve_index
    from ..retrieval.status import BUILDING, READY, index_status

    config = config_from()
    status = index_status(config, name) if "/" not in name else None
    if status is not None and status.state == BUILDING and not status.answers:
        click.echo(f"index      {name}\nstate      {status.line()}")  # nothing to show yet; not an error
        return
    path = resolve_index(name, config)  # a missing or interrupted index: its error names the fix
    m = read_manifest(path)
    m = {**m, "path": str(path), "size_bytes": folder_size(path)}
    if status is not None:
        m["state"] = {"state": status.state, "detail": status.detail, "fix": status.fix}
    if as_json:
        echo_json(m)
        return
    source, emb, faiss = m.get("source", {}), m.get("embedder", {}), m.get("faiss", {})
    from ..retrieval.progress import meaningful_rate

    embedding = m.get("embedding") or {}
    rate = meaningful_rate(int(embedding.get("passages") or 0), embedding.get("seconds"))  # not 7 million a second
    lines = [
        f"index      {m.get('name', path.name)}  ({path}, {_size(m['size_bytes'])})",
        f"state      {status.line() if status is not None else READY}",
        f"source     {source.get('path')}  sha256 {str(source.get('sha256'))[:16]}...",
        f"reader     {m.get('reader')}  documents {m.get('documents')}  passages {m.get('passages')}"
        + (f"  limit {m['limit']}" if m.get("limit") else ""),
        f"embedder   {emb.get('name')} ({emb.get('dimension')}-d, {emb.get('backend', 'torch')})"
        + (f"  {rate:,.1f} passages/s" if rate else ""),
        f"faiss      {faiss.get('type')} {faiss.get('params') or ''}".rstrip(),
        f"bm25       {(m.get('bm25') or {}).get('method')}  vocabulary {(m.get('bm25') or {}).get('vocabulary')}  "
        f"tokenizer {(m.get('bm25') or {}).get('tokenizer', 1)}",
        f"built      {m.get('created')} in {m.get('build_seconds')} s  "
        + "  ".join(f"{k} {v} s" for k, v in (m.get("seconds") or {}).items()),
        "versions   " + "  ".join(f"{k} {v}" for k, v in (m.get("versions") or {}).items()),
    ]
    lines.extend(folder_lines(m))
    cluster = m.get("cluster")
    if cluster:
        lines.append(f"ray        {cluster.get('shards')} shards ({cluster.get('shard_kind')}, {cluster.get('shard_size')} a shard) "
                     f"on {cluster.get('workers')} workers ({', '.join(cluster.get('hosts') or [])}) in "
                     f"{cluster.get('ray_seconds')} s, merged in {cluster.get('merge_seconds')} s")
    kg = m.get("kg")
    if kg:
        lines.append(f"kg         {kg.get('triples')} triples")
        ranked = sorted((kg.get("by_relation") or {}).items(), key=lambda kv: (-kv[1], kv[0]))
        for relation, count in ranked[:_KG_SHOWN]:
            lines.append(f"             {relation:<24} {count}")
        if len(ranked) > _KG_SHOWN:
            lines.append(f"             ... {len(ranked) - _KG_SHOWN} more relations (all of them with --json)")
    else:
        lines.append("kg         none" + (" (folders of documents have none)" if m.get("format") == DOCS else ""))
    click.echo("\n".join(lines))
