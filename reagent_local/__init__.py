"""reagent-local: offline ReAgent for multi-hop question answering.

``from reagent_local import ReAgent; ReAgent.load(index=..., model=...).ask(...)``;
``Pipeline(config, llm=..., retriever=..., log=...)`` for explicit dependencies.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .version import __version__

__all__ = ["Pipeline", "ReAgent", "__version__"]

if TYPE_CHECKING:
    from .api import ReAgent
    from .reasoning.pipeline import Pipeline


def __getattr__(name: str) -> Any:
    # imported lazily so `import reagent_local` stays fast (no torch, no llama.cpp)
    if name == "ReAgent":
        from .api import ReAgent

        return ReAgent
    if name == "Pipeline":
        from .reasoning.pipeline import Pipeline

        return Pipeline
    raise AttributeError(name)
