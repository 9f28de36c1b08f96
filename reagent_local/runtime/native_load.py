"""Constructing a llama.cpp model with the model parameters llama-cpp-python does not expose.

``llama_cpp.Llama`` takes no argument for ``use_extra_bufts`` (llama.cpp's weight repacking into
extra buffer types, see reagent_local/runtime/cpu.py). It builds its model parameters from
``llama_model_default_params()`` inside its constructor, so for the duration of one construction
that function is wrapped to return the parameters with the field set. A lock keeps two
constructions in one process from seeing each other's wrapper.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Any, Iterator

_CONSTRUCTING = threading.Lock()


@contextmanager
def model_params_with(*, extra_buffers: bool) -> Iterator[None]:
    """While inside, llama.cpp's default model parameters carry ``use_extra_bufts = extra_buffers``."""
    import llama_cpp.llama_cpp as native  # the module llama_cpp.Llama reads its defaults from

    with _CONSTRUCTING:
        original = native.llama_model_default_params

        def defaults() -> Any:
            params = original()
            if hasattr(params, "use_extra_bufts"):  # older llama.cpp builds have no such field
                params.use_extra_bufts = extra_buffers
            return params

        native.llama_model_default_params = defaults
        try:
            yield
        finally:
            native.llama_model_default_params = original


def construct_llama(llama_class: type, *, extra_buffers: bool, **kwargs: Any) -> Any:
    """``llama_class(**kwargs)`` (a ``llama_cpp.Llama``) with llama.cpp's extra buffer types on or off."""
    with model_params_with(extra_buffers=extra_buffers):
        llama = llama_class(**kwargs)
    return llama


def extra_buffers_of(llama: Any) -> bool | None:
    """Whether a constructed model was loaded with extra buffer types (None when the build has no such field)."""
    params = getattr(llama, "model_params", None)
    return bool(params.use_extra_bufts) if params is not None and hasattr(params, "use_extra_bufts") else None
