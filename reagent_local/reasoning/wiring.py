"""One function that wires a Pipeline from configuration: models (one per role if asked), index, graph, log.

``ReAgent.load`` and the benchmark's ReAgent methods both build their pipelines here,
so a benchmark run gets the knowledge graph and per-role models exactly as ``ask`` does.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..config import Config
from ..core.log import EventLog
from ..errors import ConfigError, IndexNotFoundError
from ..runtime.llm import LLM, LlamaModel
from ..runtime.models import resolve_model
from .pipeline import Pipeline

# the roles that call a model (the controller decides without one)
ROLES = ("decomposer", "retriever", "verifier", "assembler", "supervisor")


def load_llm(name_or_path: str, config: Config) -> LlamaModel:
    """A lazily loaded llama.cpp model from a registry name or a .gguf path."""
    path, model_id = resolve_model(name_or_path, config.paths.models)
    llm = config.llm
    model = LlamaModel(path, model_id=model_id, n_ctx=llm.n_ctx, n_threads=llm.n_threads,
                       n_gpu_layers=llm.n_gpu_layers, chat_format=llm.chat_format, seed=llm.seed,
                       temperature=llm.temperature, max_tokens=llm.max_tokens, prompt_cache_mb=llm.prompt_cache_mb,
                       prefill_block=llm.prefill_block, prefill_wide_block=llm.prefill_wide_block,
                       extra_buffers=llm.extra_buffers, warm_prefixes=llm.warm_prefixes, probe_cache=config.paths.cache)
    try:
        model.prefill_schedule()
    except ValueError as exc:
        raise ConfigError(f"llm.prefill_block / llm.prefill_wide_block: {exc}",
                          hint="set prefill_wide_block to 0 or a multiple of prefill_block (defaults 64 and 256)") from None
    return model


def role_models(config: Config) -> dict[str, LlamaModel]:
    """The models of roles that ``pipeline.role_models`` gives their own (lazily loaded)."""
    unknown = set(config.pipeline.role_models) - set(ROLES)
    if unknown:
        raise ConfigError(f"unknown role(s) in pipeline.role_models: {sorted(unknown)}",
                          hint=f"roles that call a model: {', '.join(ROLES)}")
    return {role: load_llm(name, config) for role, name in config.pipeline.role_models.items()}


def open_index(name: str, config: Config) -> Any:
    """Open an index by name or path (several, ``"a,b"``: a MultiIndex); a missing default one says how to build it."""
    from ..retrieval import open_search_index

    try:
        return open_search_index(name, config)
    except IndexNotFoundError as exc:
        if name == "enwiki-sample" and exc.hint and "quickstart" not in exc.hint:
            raise IndexNotFoundError(exc.message, hint="build it with `bash scripts/quickstart.sh`, or "
                                     "`reagent index build \"$(reagent data fetch-wiki-sample)\" --name enwiki-sample`") from None
        raise


def open_kg(index: Any, config: Config) -> Any | None:
    """The index's knowledge graph, or None when it was built without one or the config turns it off."""
    if not config.retrieval.use_kg or not hasattr(index, "path"):
        return None
    from ..kg.store import KnowledgeGraph

    return KnowledgeGraph.open(Path(index.path))


def build_pipeline(config: Config, *, llm: LLM | None = None, index: Any | None = None,
                   log: EventLog | None = None) -> Pipeline:
    """A Pipeline from configuration; pass ``llm``, ``index`` or ``log`` to share ones already open."""
    role_llms = role_models(config)
    model = llm if llm is not None else load_llm(config.llm.model, config)
    search_index = index if index is not None else open_index(config.retrieval.index, config)
    event_log = log if log is not None else EventLog(config.paths.log)
    return Pipeline(config, llm=model, retriever=search_index, log=event_log, kg=open_kg(search_index, config),
                    role_llms=role_llms)
