"""Ray, for when one machine is too slow: a sharded index build and a fanned-out benchmark.

Optional: the base install works without Ray; ``pip install -e ".[cluster]"`` adds it.
Nothing here imports ``ray`` until a function is called.

    build_index_ray(source, name, config, address=None, ...) -> Path    # reagent index build --ray
    run_benchmark_ray(dataset, file, config=..., address=None, ...)      # reagent bench run --ray

``address`` None starts Ray on this machine for the one command; ``"auto"`` joins the
cluster this machine is part of (``ray start``); ``"HOST:PORT"`` is a head node's address.
"""

from __future__ import annotations

from typing import Any


def build_index_ray(*args: Any, **kwargs: Any) -> Any:
    """See ``reagent_local.cluster.index_build.build_index_ray``."""
    from .index_build import build_index_ray as build

    return build(*args, **kwargs)


def run_benchmark_ray(*args: Any, **kwargs: Any) -> Any:
    """See ``reagent_local.cluster.bench.run_benchmark_ray``."""
    from .bench import run_benchmark_ray as run

    return run(*args, **kwargs)


__all__ = ["build_index_ray", "run_benchmark_ray"]
