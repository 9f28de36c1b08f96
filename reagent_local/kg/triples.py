"""One infobox fact, as the store keeps it and the search ranks it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Triple:
    """One infobox fact with its provenance.

    ``value`` is canonical: the target title when the infobox links an entity
    (``Montgomery, Alabama``), else the text a reader sees. ``display`` is the
    linked text when it differs from the target (``Montgomery``), else None.
    """

    subject: str
    relation: str
    value: str
    value_number: float | None
    unit: str | None
    value_date: str | None  # ISO 8601 at the source's precision: 1809-02-12, 1861-03, 1834
    raw_key: str  # the infobox key as written, e.g. "LargestCity"
    passage_id: str  # f"{subject}#0": the article's first passage
    display: str | None = None


def triple_to_fact_text(triple: Triple) -> str:
    """One line an LLM or a reader can use: ``Alabama: capital = Montgomery, Alabama (shown as "Montgomery")``."""
    text = f"{triple.subject}: {triple.relation.replace('_', ' ')} = {triple.value}"
    if triple.display and triple.display != triple.value:
        text += f' (shown as "{triple.display}")'
    if triple.value_date and triple.value_date != triple.value:
        text += f" [{triple.value_date}]"
    return text
