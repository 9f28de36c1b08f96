"""Typed message bodies: what a message on the channel carries, written and read like the events.

A body is a frozen, keyword-only dataclass registered with :func:`body` under the message
type it travels as (``assert``, ``inform``, ``reject``, ``challenge``). The channel logs a
message with ``to_payload()`` of its body and the body's class name, so :func:`decode`
reads the body of a logged message back. The roles' bodies (evidence for a step, a
rejected answer, a road's answer, ...) are in ``reagent_local/agents/messages.py``; the
core knows only what the channel needs: the reason a reject gives and the kind of
escalation a reject to the supervisor becomes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Mapping, TypeVar

from .records import Record

MESSAGE_TYPES = ("assert", "inform", "reject", "challenge")


class MessageBody(Record):
    """Base of every message body; ``TYPE`` is the message type it travels as."""

    TYPE: ClassVar[str] = ""

    def why(self) -> str:
        """The reason a reject gives (logged with the retractions or the escalation it causes)."""
        return ""

    def escalation(self) -> str:
        """The kind of conflict a reject addressed to the supervisor becomes."""
        return "reject"


MESSAGE_BODIES: dict[str, type[MessageBody]] = {}  # class name -> class, filled by @body
M = TypeVar("M", bound=MessageBody)


def body(message_type: str) -> Callable[[type[M]], type[M]]:
    """Class decorator: a frozen keyword-only dataclass that travels as ``message_type``, added to MESSAGE_BODIES."""
    if message_type not in MESSAGE_TYPES:
        raise ValueError(f"unknown message type {message_type!r}; use one of {MESSAGE_TYPES}")

    def wrap(cls: type[M]) -> type[M]:
        if cls.__name__ in MESSAGE_BODIES:
            raise ValueError(f"a message body named {cls.__name__!r} is already registered")
        cls.TYPE = message_type
        MESSAGE_BODIES[cls.__name__] = made = dataclass(frozen=True, kw_only=True)(cls)
        return made
    return wrap


def decode(name: str, payload: Mapping[str, Any]) -> MessageBody | None:
    """The typed body of a logged message (its ``body`` name and ``payload``); None when it has none
    or names a class this process has not registered (import reagent_local.agents.messages first)."""
    cls = MESSAGE_BODIES.get(name)
    return cls.from_payload(payload) if cls is not None else None
