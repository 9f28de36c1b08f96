"""Prompts are data files rendered with strict templating.

A prompt file holds a system part and a user part separated by a line ``---user---``.
Placeholders are ``$name`` / ``${name}`` (``string.Template``); rendering fails when a
placeholder has no value or a value has no placeholder, so a renamed field can never
silently send a prompt with a hole in it. Fixed instructions come first in the system
part so llama.cpp reuses their KV cache across calls.
"""

from __future__ import annotations

import re
from functools import lru_cache
from importlib import resources
from pathlib import Path
from string import Template

Message = dict[str, str]  # one chat message: {"role": ..., "content": ...} (runtime/llm.py sends them)
_SPLIT = "\n---user---\n"
_PLACEHOLDER = re.compile(r"\$(?:\{(\w+)\}|(\w+))")
# the project's prompt files: their system parts are the roles' fixed instructions that warm prefixes keep
PROMPT_FOLDERS = tuple(Path(__file__).resolve().parent.parent / sub / "prompts" for sub in ("agents", "bench"))
_FIXED: set[str] = set()  # the system part of every prompt file loaded in this process


@lru_cache(maxsize=None)
def load_prompt(package: str, name: str) -> tuple[str, str]:
    """Read ``<package>/prompts/<name>.txt`` and split it into (system, user) templates."""
    text = resources.files(package).joinpath("prompts", f"{name}.txt").read_text(encoding="utf-8")
    return _parts(text, f"{package}/{name}.txt")


def _parts(text: str, where: str) -> tuple[str, str]:
    if _SPLIT not in text:
        raise ValueError(f"prompt {where} lacks the '---user---' separator line")
    system, user = text.split(_SPLIT, 1)
    _FIXED.add(system.strip())
    return system.strip(), user.strip()


@lru_cache(maxsize=None)
def _read_project_prompts() -> None:
    for folder in PROMPT_FOLDERS:  # read as files: importing the bench package would take 0.3 s
        for path in sorted(folder.glob("*.txt")):
            try:
                _parts(path.read_text(encoding="utf-8"), str(path))
            except (OSError, ValueError):
                continue


def is_fixed_text(text: str) -> bool:
    """Whether ``text`` is the system part of a prompt file (the project's, or one loaded here): fixed by construction.

    Warm role prefixes keep only these (runtime/warm.py): a system message that varies from call to call would
    fill the cache with states nobody asks for again.
    """
    if text not in _FIXED:
        _read_project_prompts()  # a served model gets calls rendered in another process
    return text in _FIXED


def placeholders(template: str) -> set[str]:
    """Names used as placeholders in a template."""
    return {a or b for a, b in _PLACEHOLDER.findall(template)}


def render(template: str, values: dict[str, object]) -> str:
    """Substitute values strictly: every placeholder filled, every value used."""
    wanted = placeholders(template)
    missing = wanted - values.keys()
    unused = values.keys() - wanted
    if missing or unused:
        raise ValueError(f"prompt placeholders missing {sorted(missing)} / unused values {sorted(unused)}")
    return Template(template).substitute({k: str(v) for k, v in values.items()})


def render_messages(package: str, name: str, **values: object) -> list[Message]:
    """Render a prompt file into chat messages; system values are not allowed (cache reuse)."""
    system, user = load_prompt(package, name)
    if placeholders(system):
        raise ValueError(f"prompt {name}: the system part must be fixed text (it is the cached prefix)")
    return [{"role": "system", "content": system}, {"role": "user", "content": render(user, values)}]
