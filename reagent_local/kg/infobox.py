"""Infobox templates of one article -> triples (subject = article title).

Only the infobox source is parsed (found by a brace-balanced scan), not the whole
page, which keeps extraction fast on long articles. Nested infoboxes are extracted
on their own and skipped inside their parent's values.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

import mwparserfromhell
from mwparserfromhell.nodes import Template
from mwparserfromhell.wikicode import Wikicode

from ..dates import parse_date_text, parse_quantity
from ..text import fold
from .relations import ENTITY_RELATIONS, TEXT_RELATIONS, WHEN_RELATIONS, canonical_relation, key_unit, snake_case
from .triples import Triple
from .values import DateValue, Link, Renderer, entity_links, item_text

_START = re.compile(
    r"\{\{\s*(?:template:\s*)?(?:infobox|automatic taxobox|taxobox|speciesbox)(?=[\s|_}<])", re.IGNORECASE
)
# Infobox types that describe something other than the article's subject
# (a president's cabinet: "State = William H. Seward" is not a fact about Lincoln).
_NOT_ABOUT_SUBJECT = re.compile(r"\{\{\s*(?:template:\s*)?infobox[ _]+(?:u\.s\. )?cabinet\b", re.IGNORECASE)
_BRACES = re.compile(r"\{\{|\}\}")
_QUALIFIER_ONLY = re.compile(r"^as of \d{4}$", re.IGNORECASE)  # "<small>As of 2010</small>" heads a list
_LEADER = re.compile(r"^leader_title(\d*)$")
# Values that must never reach the graph: leftover wiki markup.
MARKUP = ("{{", "}}", "[[", "]]", "<ref", "'''", "|", "<br", "<small", "<!--")
# Values that mean "same as the capital" (Algeria: largest_city = capital).
_CAPITAL_WORDS = {"capital", "capital city", "the capital", "capital city"}


@dataclass(frozen=True)
class FieldValue:
    """One value of one field before it becomes a Triple."""

    value: str
    display: str | None = None
    number: float | None = None
    unit: str | None = None
    date: str | None = None
    entity: bool = False


def infobox_sources(wikitext: str) -> list[str]:
    """The source text of every infobox template in the page, outer ones first."""
    sources = []
    for match in _START.finditer(wikitext):
        if _NOT_ABOUT_SUBJECT.match(wikitext, match.start()):
            continue
        depth = 0
        for brace in _BRACES.finditer(wikitext, match.start()):
            depth += 1 if brace.group() == "{{" else -1
            if depth == 0:
                sources.append(wikitext[match.start(): brace.end()])
                break
    return sources


def _is_date_relation(relation: str) -> bool:
    return relation in WHEN_RELATIONS or relation.endswith(("_date", "date", "_year")) or relation in {"born", "died"}


def _link_value(link: Link) -> FieldValue:
    """A linked value: its target title, unless the target only explains the shown text.

    ``[[Telephone numbers in Algeria|+213]]`` and ``[[List of ...|16th]]`` show the
    fact and link to an explanation, so the shown text is the value.
    """
    shown = link.display.strip()
    explains = link.target.startswith("List of ") or (
        shown[:1].isdigit() or shown[:1] in "+-−"
    ) and fold(shown) not in fold(link.target)
    if explains and shown:
        return FieldValue(shown)
    return FieldValue(link.target, display=shown if shown and shown != link.target else None, entity=True)


class Extractor:
    """Extracts triples page by page and counts what it had to leave out."""

    def __init__(self) -> None:
        self.renderer = Renderer()
        self.dropped_values = 0  # values that still held markup after cleaning
        self.unresolved_capital = 0  # "largest_city = capital" with no capital on the page

    @property
    def dropped_templates(self) -> Counter[str]:
        """Names of templates inside values that were dropped, with counts."""
        return self.renderer.dropped_templates

    def field_values(self, relation: str, raw_key: str, code: Wikicode) -> list[FieldValue]:
        """Values of one infobox field: one per list item, or one per linked entity."""
        values: list[FieldValue] = []
        for item in self.renderer.items(code):
            date = next((t for t in item if isinstance(t, DateValue)), None)
            if date is not None:
                values.append(FieldValue(date.display, date=date.iso))
                continue
            links = None if relation in TEXT_RELATIONS else entity_links(item)
            if links:
                for link in links:
                    values.append(_link_value(link))
                continue
            text = item_text(item)
            if not text or _QUALIFIER_ONLY.match(text):
                continue
            iso = parse_date_text(text, allow_year=_is_date_relation(relation))
            if iso is not None:
                values.append(FieldValue(text, date=iso))
                continue
            quantity = parse_quantity(text, default_unit=key_unit(raw_key))
            number, unit = quantity if quantity else (None, None)
            values.append(FieldValue(text, number=number, unit=unit))
        if relation in ENTITY_RELATIONS and any(v.entity for v in values):
            values = [v for v in values if v.entity]  # "[[Birmingham]]<br>212,038": the city, not its size
        elif _is_date_relation(relation) and any(v.date for v in values):
            values = [v for v in values if v.date]  # "322 BC<br>[[Euboea]]": the date, not the place
        return values

    def template_triples(self, subject: str, template: Template) -> list[Triple]:
        """Triples of one infobox template."""
        passage_id = f"{subject}#0"
        params = {str(p.name).strip(): p.value for p in template.params if p.showkey}
        leader_names: set[str] = set()
        triples: list[Triple] = []

        def add(relation: str, raw_key: str, code: Wikicode) -> None:
            for v in self.field_values(relation, raw_key, code):
                triple = Triple(subject, relation, v.value, v.number, v.unit, v.date, raw_key, passage_id, v.display)
                if any(m in v.value or m in (v.display or "") for m in MARKUP):
                    self.dropped_values += 1
                    continue
                triples.append(triple)

        # leader_titleN / leader_nameN pairs: "President" = "Abdelaziz Bouteflika"
        for key, code in params.items():
            match = _LEADER.match(snake_case(key))
            if not match:
                continue
            name_key = next((k for k in params if snake_case(k) == f"leader_name{match.group(1)}"), None)
            title = self.renderer.text(code)
            if name_key is None or not title:
                continue
            leader_names.add(name_key)
            add(snake_case(title) or "leader", name_key, params[name_key])
        for key, code in params.items():
            if key in leader_names or _LEADER.match(snake_case(key)) or not str(code).strip():
                continue
            relation = canonical_relation(key)
            if relation is not None:
                add(relation, key, code)
        return triples

    def page_triples(self, title: str, wikitext: str) -> list[Triple]:
        """All triples from the page's infoboxes, deduplicated, "capital" references resolved."""
        triples: list[Triple] = []
        for source in infobox_sources(wikitext):
            parsed = mwparserfromhell.parse(source)
            templates = [n for n in parsed.nodes if isinstance(n, Template)]
            if templates:
                triples.extend(self.template_triples(title, templates[0]))
        triples = self._resolve_capital(triples)
        seen: set[tuple[str, str]] = set()
        unique = []
        for t in triples:
            if (t.relation, t.value) not in seen:
                seen.add((t.relation, t.value))
                unique.append(t)
        return unique

    def _resolve_capital(self, triples: list[Triple]) -> list[Triple]:
        capitals = [t for t in triples if t.relation == "capital" and t.value.casefold() not in _CAPITAL_WORDS]
        resolved = []
        for t in triples:
            if t.relation == "capital" or t.value.casefold() not in _CAPITAL_WORDS:
                resolved.append(t)
            elif capitals:
                resolved.extend(
                    Triple(t.subject, t.relation, c.value, c.value_number, c.unit, c.value_date,
                           t.raw_key, t.passage_id, c.display)
                    for c in capitals
                )
            else:
                self.unresolved_capital += 1
        return resolved
