"""When may a question go to a running server? When the server would answer it exactly as this process would.

Both sides compute an ``identity`` from their configuration: the code's version, the model
files (resolved), the index folder, the log file, and every setting of ``[llm]`` and
``[retrieval]`` that changes an answer. A server can take a question whose identity equals its
own; the ``[pipeline]`` settings (backtracking, rules, budgets) travel with each question, since
the server builds a pipeline per question around its one model and index. Settings that only
change speed (``llm.n_threads``, ``llm.prompt_cache_mb``, ``llm.warm_prefixes``, ``llm.use_server``) are left out.
"""

from __future__ import annotations

import json
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any, Mapping

from ..config import Config, PipelineConfig, apply_updates
from ..errors import ReagentError
from ..version import code_version

SPEED_ONLY = {"llm": {"n_threads", "prompt_cache_mb", "warm_prefixes", "use_server", "model"}, "retrieval": {"index"}}
NOT_PER_QUESTION = {"role_models"}  # the server loads these once; compared in the identity instead


def _plain(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


def _model_ref(name: str, config: Config) -> str:
    from ..runtime.models import resolve_model

    try:
        return str(resolve_model(name, config.paths.models)[0])
    except ReagentError:  # not pulled here: the name itself (the server's would not match either)
        return name


def _index_ref(name: str, config: Config) -> str:
    """The index folder (several, ``"a,b"``: their folders joined by commas, in the order given)."""
    from ..retrieval.layout import resolve_index

    refs = []
    for part in name.split(",") if "," in name else [name]:
        try:
            refs.append(str(resolve_index(part.strip(), config)))
        except ReagentError:
            refs.append(part.strip())
    return ",".join(refs)


def identity(config: Config) -> dict[str, Any]:
    """What must be equal between a client and a server for the server to answer the client's questions."""
    sections = {name: {k: v for k, v in asdict(getattr(config, name)).items() if k not in SPEED_ONLY[name]}
                for name in ("llm", "retrieval")}
    return _plain({
        "code": code_version(),
        "model": _model_ref(config.llm.model, config),
        "role_models": {role: _model_ref(name, config) for role, name in sorted(config.pipeline.role_models.items())},
        "index": _index_ref(config.retrieval.index, config),
        "log": Path(config.paths.log).resolve(),
        **sections,
    })


def model_identity(config: Config) -> dict[str, Any]:
    """The part of ``identity`` a model call depends on (a benchmark sends calls, not questions)."""
    whole = identity(config)
    return {"code": whole["code"], "model": whole["model"], "llm": whole["llm"]}


def _differences(mine: Mapping[str, Any], theirs: Mapping[str, Any], prefix: str = "") -> list[str]:
    out = []
    for key in sorted(set(mine) | set(theirs)):
        a, b = mine.get(key), theirs.get(key)
        if isinstance(a, Mapping) and isinstance(b, Mapping) and key not in ("role_models",):
            out += _differences(a, b, f"{prefix}{key}.")
        elif a != b:
            out.append(f"{prefix}{key}: the server has {b!r}, this process {a!r}")
    return out


def mismatch(mine: Mapping[str, Any], theirs: Mapping[str, Any]) -> str | None:
    """Why a server cannot answer for this process (its first two differences), or None when it can."""
    diffs = _differences(mine, theirs)
    if not diffs:
        return None
    return "; ".join(diffs[:2]) + (f" (and {len(diffs) - 2} more)" if len(diffs) > 2 else "")


def question_settings(config: Config) -> dict[str, Any]:
    """The ``[pipeline]`` settings a question carries to the server."""
    return _plain({k: v for k, v in asdict(config.pipeline).items() if k not in NOT_PER_QUESTION})


def with_question_settings(config: Config, settings: Mapping[str, Any] | None) -> Config:
    """The server's configuration with a question's ``[pipeline]`` settings (validated as a config file's are)."""
    if not settings:
        return config
    known = {f.name for f in fields(PipelineConfig)} - NOT_PER_QUESTION
    unknown = set(settings) - known
    if unknown:
        raise ReagentError(f"unknown per-question settings: {sorted(unknown)}",
                           hint=f"a question may carry these [pipeline] settings: {sorted(known)}")
    return apply_updates(config, {"pipeline": dict(settings)}, "the request")
