"""reagent-local: offline ReAgent for multi-hop question answering.

``from reagent_local import ReAgent; ReAgent.load(index=..., model=...).ask(...)``
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["ReAgent", "__version__"]

if TYPE_CHECKING:
    from .api import ReAgent


def __getattr__(name: str) -> Any:
    # imported lazily so `import reagent_local` stays fast (no torch, no llama.cpp)
    if name == "ReAgent":
        from .api import ReAgent

        return ReAgent
    raise AttributeError(name)
