"""The Python API: ``ReAgent.load(index=..., model=...).ask("...")``."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from .answer import Answer
from .config import Config, load_config
from .errors import ConfigError, IndexNotFoundError
from .llm import LLM, LlamaModel
from .core.log import EventLog
from .models import resolve_model
from .pipeline import Pipeline


# the roles that call a model (the supervisor and controller decide without one)
ROLES = ("decomposer", "retriever", "verifier", "assembler")


def load_llm(name_or_path: str, config: Config) -> LlamaModel:
    """A lazily loaded llama.cpp model from a registry name or a .gguf path."""
    path, model_id = resolve_model(name_or_path, config.paths.models)
    llm = config.llm
    return LlamaModel(path, model_id=model_id, n_ctx=llm.n_ctx, n_threads=llm.n_threads,
                      n_gpu_layers=llm.n_gpu_layers, chat_format=llm.chat_format, seed=llm.seed,
                      temperature=llm.temperature, max_tokens=llm.max_tokens)


def open_index(name: str, config: Config) -> Any:
    """Open an index by name or path, with a hint that says how to build the default one."""
    from .retrieval import Index

    try:
        return Index.open(name, config)
    except IndexNotFoundError as exc:
        if name == "enwiki-sample" and exc.hint and "quickstart" not in exc.hint:
            raise IndexNotFoundError(exc.message, hint="build it with `bash scripts/quickstart.sh`, or "
                                     "`reagent index build \"$(reagent data fetch-wiki-sample)\" --name enwiki-sample`") from None
        raise


def open_kg(index: Any) -> Any | None:
    """The index's knowledge graph, or None when it was built without one."""
    from .kg.store import KnowledgeGraph

    return KnowledgeGraph.open(Path(index.path))


class ReAgent:
    """A ready-to-ask pipeline: model, index, knowledge graph and event log wired together."""

    def __init__(self, pipeline: Pipeline) -> None:
        self.pipeline = pipeline

    @classmethod
    def load(cls, index: str | None = None, model: str | None = None, *, backtracking: str | None = None,
             config: Config | None = None, llm: LLM | None = None, log_path: str | Path | None = None) -> "ReAgent":
        """Open everything lazily (the model loads on the first question)."""
        config = config or load_config({"retrieval.index": index, "llm.model": model,
                                        "pipeline.backtracking": backtracking})
        if index is not None and config.retrieval.index != index:
            config = replace(config, retrieval=replace(config.retrieval, index=index))
        if backtracking is not None and config.pipeline.backtracking != backtracking:
            config = replace(config, pipeline=replace(config.pipeline, backtracking=backtracking))
        model_llm = llm or load_llm(model or config.llm.model, config)
        unknown = set(config.pipeline.role_models) - set(ROLES)
        if unknown:
            raise ConfigError(f"unknown role(s) in pipeline.role_models: {sorted(unknown)}",
                              hint=f"roles that call a model: {', '.join(ROLES)}")
        role_llms = {role: load_llm(name, config) for role, name in config.pipeline.role_models.items()}
        search_index = open_index(config.retrieval.index, config)
        kg = open_kg(search_index) if config.retrieval.use_kg else None
        log = EventLog(Path(log_path) if log_path else config.paths.log)
        return cls(Pipeline(config, llm=model_llm, retriever=search_index, log=log, kg=kg, role_llms=role_llms))

    def ask(self, question: str) -> Answer:
        """Answer one question."""
        return self.pipeline.ask(question)

    def close(self) -> None:
        """Release the model, the index and the log."""
        for closable in (self.pipeline.llm, self.pipeline.retriever, self.pipeline.log, self.pipeline.kg,
                         *self.pipeline.role_llms.values()):
            if closable is not None and hasattr(closable, "close"):
                closable.close()

    def __enter__(self) -> "ReAgent":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
