"""Infobox key normalisation onto the shared relation names."""

from __future__ import annotations

import pytest

from reagent_local.kg.relations import KEY_SYNONYMS, canonical_relation, key_unit, normalise_key, snake_case
from reagent_local.core.relations import ALL_RELATIONS


@pytest.mark.parametrize(
    ("key", "relation"),
    [
        ("LargestCity", "largest_city"),
        ("largestcity", "largest_city"),
        ("largest_city", "largest_city"),
        ("born", "birth_date"),
        ("birth_date", "birth_date"),
        ("Capital", "capital"),
        ("2010Pop", "population"),
        ("population_estimate", "population"),
        ("directed_by", "director"),
        ("released", "release_date"),
        ("spouse(s)", "spouse"),
        ("predecessor1", "predecessor"),
        ("film name", "film_name"),
        ("TotalAreaUS", "total_area_us"),
        ("population_density_km2", "population_density_km2"),  # a unit, not an index
        ("area_km2", "area"),
    ],
)
def test_canonical_relation(key: str, relation: str) -> None:
    assert canonical_relation(key) == relation


@pytest.mark.parametrize("key", ["image", "image_flag", "caption", "alt", "map_caption", "signature", "footnote_a", "logo_size"])
def test_layout_keys_are_not_relations(key: str) -> None:
    assert canonical_relation(key) is None


def test_synonyms_map_onto_shared_names() -> None:
    # Only these two extra targets are ours; every other synonym lands on a shared relation name.
    extras = {"area", "official_language"}
    assert set(KEY_SYNONYMS.values()) - ALL_RELATIONS == extras
    covered = set(KEY_SYNONYMS.values()) & ALL_RELATIONS
    assert ALL_RELATIONS - covered == {"answer"}  # "answer" is about sub-questions, not infoboxes


def test_snake_case_and_units() -> None:
    assert snake_case("ISOCode") == "iso_code"
    assert snake_case("  Lieutenant Governor ") == "lieutenant_governor"
    assert normalise_key("term_start2") == "term_start"
    assert key_unit("area_km2") == "km2" and key_unit("area_sq_mi") is None
