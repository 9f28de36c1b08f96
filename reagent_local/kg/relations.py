"""Infobox key normalisation: raw keys -> snake_case, common synonyms -> canonical relations.

Different infobox types spell the same relation differently (``birth_date``,
``born``, ``date_of_birth``; ``LargestCity``, ``largestcity``). Keys in the table
below map onto the canonical names of :mod:`reagent_local.core.relations`, which the
structured form of statements also uses; every other key is kept as normalised
snake_case so nothing is lost.
"""

from __future__ import annotations

import re

from ..core.relations import ALL_RELATIONS

# normalised key (see normalise_key) -> canonical relation
KEY_SYNONYMS: dict[str, str] = {
    # people
    "born": "birth_date", "birth_date": "birth_date", "birthdate": "birth_date",
    "date_of_birth": "birth_date", "dob": "birth_date",
    "birth_place": "birth_place", "birthplace": "birth_place", "place_of_birth": "birth_place",
    "died": "death_date", "death_date": "death_date", "deathdate": "death_date",
    "date_of_death": "death_date", "dod": "death_date",
    "death_place": "death_place", "deathplace": "death_place", "place_of_death": "death_place",
    "spouse": "spouse", "spouses": "spouse", "spouse_s": "spouse", "partner": "spouse",
    "nationality": "nationality", "citizenship": "nationality",
    # places
    "capital": "capital", "capital_city": "capital",
    "largest_city": "largest_city", "largestcity": "largest_city", "largest_settlement": "largest_city",
    "population": "population", "population_total": "population", "population_estimate": "population",
    "population_census": "population", "2010_pop": "population", "2010pop": "population",
    "pop": "population", "population_est": "population",
    "area_km2": "area", "total_area": "area", "area_total_km2": "area",
    "country": "country", "country_of_origin": "country",
    "location": "located_in", "located_in": "located_in", "locale": "located_in",
    # works and organisations
    "director": "director", "directors": "director", "directed_by": "director",
    "author": "author", "authors": "author",
    "language": "language", "languages": "language",
    "starring": "starring", "cast": "starring",
    "genre": "genre", "genres": "genre",
    "released": "release_date", "release_date": "release_date", "released_date": "release_date",
    "pub_date": "release_date", "published": "release_date", "publication_date": "release_date",
    "founded": "founded", "foundation": "founded", "established": "founded",
    "formation": "founded", "founded_date": "founded", "date_founded": "founded",
    "official_lang": "official_language", "official_languages": "official_language",
}

# Units implied by a key's suffix (the value itself is often a bare number).
KEY_UNITS: dict[str, str] = {"area_km2": "km2", "total_area": "km2", "area_total_km2": "km2"}

# Relations whose values are entities: links resolve to their target titles, and
# non-entity items next to an entity (a population after the largest city) are dropped.
ENTITY_RELATIONS: frozenset[str] = frozenset(
    {"capital", "largest_city", "birth_place", "death_place", "country", "located_in",
     "director", "author", "spouse", "starring", "producer", "writer", "nationality",
     "predecessor", "successor", "resting_place", "restingplace", "distributor", "party",
     "children", "parents", "influences", "influenced", "doctoral_advisor", "known_for"}
)

# Relations whose values are prose: links show their visible text, never their target
# ("Alabaman or Alabamian" links to "Adjectivals and demonyms for U.S. states").
TEXT_RELATIONS: frozenset[str] = frozenset(
    {"demonym", "nickname", "motto", "national_motto", "order", "slogan", "film_name",
     "native_name", "conventional_long_name", "common_name", "name", "fullname", "title"}
)

# Keys that describe layout or images, not facts about the subject.
_SKIP_PATTERN = re.compile(
    r"^(image|img|caption|alt|map|logo|flag|seal|coat|signature|symbol|footnote|"
    r"module|embed|child|width|height|size|upright|pushpin|coordinates|coord|lat|long|"
    r"label|border|bgcolour|background|website_?url)"
    r"|(_size|_width|_alt|_caption|_image|_map|_ref|_note|_notes|_footnote|link)$"
)

_UNIT_SUFFIX = re.compile(r"_(km|mi|m|ft)[23]$")  # area_km2 keeps its 2: a unit, not an index
_CAMEL_1 = re.compile(r"([a-z0-9])([A-Z])")
_CAMEL_2 = re.compile(r"([A-Z]+)([A-Z][a-z])")
_NON_WORD = re.compile(r"[^a-z0-9]+")


def snake_case(key: str) -> str:
    """``LargestCity`` -> ``largest_city``, ``film name`` -> ``film_name``, ``2010Pop`` -> ``2010_pop``."""
    key = _CAMEL_2.sub(r"\1_\2", key.strip())
    key = _CAMEL_1.sub(r"\1_\2", key)
    return _NON_WORD.sub("_", key.lower()).strip("_")


def normalise_key(key: str) -> str:
    """snake_case without a trailing index (``predecessor1`` -> ``predecessor``)."""
    key = snake_case(key)
    if _UNIT_SUFFIX.search(key):
        return key
    stripped = re.sub(r"_?\d+$", "", key)
    return stripped or key


def canonical_relation(key: str) -> str | None:
    """Relation name for a raw infobox key, or None when the key is layout (images, captions)."""
    key_snake = snake_case(key)
    for candidate in (key_snake, key_snake.replace("_", ""), normalise_key(key)):
        if candidate in KEY_SYNONYMS:
            return KEY_SYNONYMS[candidate]
    relation = normalise_key(key)
    if not relation or _SKIP_PATTERN.search(relation):
        return None
    return relation


def key_unit(key: str) -> str | None:
    """Unit implied by the key (``area_km2`` -> ``km2``), if any."""
    return KEY_UNITS.get(snake_case(key))


def is_canonical(relation: str) -> bool:
    """True when the relation is one of the shared names of reagent_local.core.relations."""
    return relation in ALL_RELATIONS


# Question words that point at relations, for ranking triples against a question.
QUESTION_CUES: dict[str, tuple[str, ...]] = {
    "capital": ("capital",),
    "largest": ("largest_city",), "biggest": ("largest_city",),
    "born": ("birth_date", "birth_place"), "birth": ("birth_date", "birth_place"),
    "birthplace": ("birth_place",), "birthday": ("birth_date",),
    "died": ("death_date", "death_place"), "death": ("death_date", "death_place"),
    "die": ("death_date", "death_place"), "buried": ("resting_place", "restingplace"),
    "population": ("population",), "populous": ("population",), "inhabitants": ("population",),
    "people": ("population",), "live": ("population",),
    "area": ("area",), "big": ("area", "population"), "large": ("area", "population"),
    "country": ("country", "nationality"), "nationality": ("nationality", "country"),
    "directed": ("director",), "director": ("director",), "direct": ("director",),
    "wrote": ("author", "writer"), "written": ("author", "writer", "screenplay"),
    "author": ("author",), "writer": ("writer", "author"),
    "married": ("spouse",), "wife": ("spouse",), "husband": ("spouse",), "spouse": ("spouse",),
    "language": ("language", "official_language"), "languages": ("language", "official_language"),
    "spoken": ("language", "official_language"), "starred": ("starring",), "star": ("starring",),
    "actor": ("starring",), "actress": ("starring",), "cast": ("starring",),
    "released": ("release_date",), "release": ("release_date",), "published": ("release_date", "publisher"),
    "founded": ("founded",), "established": ("founded", "established_date"), "formed": ("founded",),
    "located": ("located_in", "country"), "location": ("located_in",),
    "genre": ("genre",), "produced": ("producer",), "producer": ("producer",),
    "president": ("president",), "minister": ("prime_minister",), "leader": ("president", "prime_minister"),
    "currency": ("currency",), "religion": ("religion",), "party": ("party",),
    "children": ("children",), "parents": ("parents",), "occupation": ("occupation", "profession"),
    "profession": ("profession", "occupation"), "runtime": ("runtime",), "long": ("runtime",),
}

# Which-type words: "when" prefers dates, "where" places, "how many" numbers.
WHEN_RELATIONS = frozenset({"birth_date", "death_date", "release_date", "founded"})
WHERE_RELATIONS = frozenset({"birth_place", "death_place", "located_in", "country", "capital"})
