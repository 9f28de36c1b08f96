"""Canonical relation names shared by statements, the core's rules and the knowledge graph.

A statement's structured form and a knowledge-graph triple use these names, so a
deterministic rule can compare an asserted value with an infobox value directly.
"""

from __future__ import annotations

# Relations that have one value per subject (two different values conflict).
FUNCTIONAL_RELATIONS: frozenset[str] = frozenset(
    {
        "capital",
        "largest_city",
        "birth_date",
        "birth_place",
        "death_date",
        "death_place",
        "population",
        "country",
        "director",
        "founded",
        "located_in",
        "release_date",
        "nationality",
        "answer",  # the answer to one sub-question (yes/no, a span)
    }
)

# Relations whose values may legitimately be several (a list is not a conflict).
MULTI_VALUED_RELATIONS: frozenset[str] = frozenset({"spouse", "author", "language", "starring", "genre"})

# Numbers within this relative tolerance are the same value (census vs estimate).
NUMERIC_TOLERANCE: dict[str, float] = {"population": 0.10, "area": 0.05}

ALL_RELATIONS: frozenset[str] = FUNCTIONAL_RELATIONS | MULTI_VALUED_RELATIONS
