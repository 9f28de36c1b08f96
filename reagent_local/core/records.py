"""Typed records as JSON: the conversion events and message bodies share.

A record is a frozen, keyword-only dataclass. ``to_payload()`` gives its JSON object and
``from_payload()`` reads one back; conversion is driven by each field's type hint:
statements go through ``statement_to_dict``/``statement_from_dict``, nested dataclasses
(an evidence passage, a road) become objects and come back as their class, tuples and
frozensets come back as such, ``Literal`` fields are checked. Constructing a record
normalises it the same way (a list given for a tuple field becomes a tuple), so reading
back what was written gives an equal record.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import types
import typing
from dataclasses import MISSING, fields
from functools import cache
from typing import Any, Literal, Mapping, TypeVar, Union

from .knowledge import Statement, statement_from_dict, statement_to_dict

R = TypeVar("R", bound="Record")


class Record:
    """Base of typed records; subclasses are frozen, keyword-only dataclasses."""

    def __post_init__(self) -> None:
        hints = hints_of(type(self))
        for f in fields(self):  # type: ignore[arg-type]
            object.__setattr__(self, f.name, load(getattr(self, f.name), hints[f.name], f.name))

    def to_payload(self) -> dict[str, Any]:
        """The JSON-ready payload, one key per field."""
        return {f.name: dump(getattr(self, f.name)) for f in fields(self)}  # type: ignore[arg-type]

    @classmethod
    def from_payload(cls: type[R], payload: Mapping[str, Any]) -> R:
        """Read a payload back (missing keys take the field's default; unknown keys are ignored)."""
        missing = [f.name for f in fields(cls)  # type: ignore[arg-type]
                   if f.name not in payload and f.default is MISSING and f.default_factory is MISSING]
        if missing:
            raise ValueError(f"no {', '.join(missing)} in the payload")
        return cls(**{f.name: payload[f.name] for f in fields(cls) if f.name in payload})  # type: ignore[arg-type]


@cache
def hints_of(cls: type) -> dict[str, Any]:
    """A class's resolved type hints (cached)."""
    return typing.get_type_hints(cls)


def dump(value: Any) -> Any:
    """A value as JSON-shaped data."""
    if isinstance(value, Statement):
        return statement_to_dict(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: dump(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, frozenset):
        return sorted(dump(v) for v in value)
    if isinstance(value, (tuple, list)):
        return [dump(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): dump(v) for k, v in value.items()}
    return value


def load(value: Any, hint: Any, name: str) -> Any:
    """``value`` (JSON-shaped or already typed) as the type ``hint`` describes."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any:
        return value
    if origin in (Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        return load(value, next(a for a in args if a is not type(None)), name)
    if origin is Literal:
        if value not in args:
            raise ValueError(f"{name} must be one of {args}, got {value!r}")
        return value
    if origin is tuple:
        if not isinstance(value, (tuple, list)):
            raise TypeError(f"{name} must be a sequence, got {value!r}")
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(load(v, args[0], name) for v in value)
        if len(value) != len(args):
            raise ValueError(f"{name} must have {len(args)} items, got {value!r}")
        return tuple(load(v, a, name) for v, a in zip(value, args))
    if origin is frozenset:
        if not isinstance(value, (frozenset, set, tuple, list)):
            raise TypeError(f"{name} must be a set, got {value!r}")
        return frozenset(load(v, args[0], name) for v in value) if args else frozenset(value)
    if origin in (dict, collections.abc.Mapping):
        if not isinstance(value, Mapping):
            raise TypeError(f"{name} must be a mapping, got {value!r}")
        return dump(value)  # JSON-shaped now, so it equals itself after a trip through the log
    if hint is Statement:
        return value if isinstance(value, Statement) else statement_from_dict(value)
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return value if isinstance(value, hint) else _nested(value, hint, name)
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f"{name} must be a number, got {value!r}")
        return float(value)
    if hint in (int, str, bool) and (not isinstance(value, hint) or (hint is int and isinstance(value, bool))):
        raise TypeError(f"{name} must be {hint.__name__}, got {value!r}")
    return value


def _nested(value: Any, cls: type, name: str) -> Any:
    """A nested dataclass read back from its JSON object."""
    if not isinstance(value, Mapping):
        raise TypeError(f"{name} must be an object for {cls.__name__}, got {value!r}")
    hints = hints_of(cls)
    return cls(**{f.name: load(value[f.name], hints[f.name], f"{name}.{f.name}")
                  for f in fields(cls) if f.name in value})
