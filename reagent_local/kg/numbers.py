"""Numbers with units in infobox values: ``4,858,979 (2015 est.)``, ``$599.83 billion``, ``100 minutes``."""

from __future__ import annotations

import re

_CURRENCIES = {"US$": "USD", "$": "USD", "£": "GBP", "€": "EUR", "¥": "JPY", "₹": "INR"}
_SCALES = {"thousand": 1e3, "million": 1e6, "billion": 1e9, "trillion": 1e12}
_UNIT_ALIASES = {"km²": "km2", "sq km": "km2", "square kilometres": "km2", "square kilometers": "km2",
                 "mi²": "sq mi", "square miles": "sq mi", "min": "minutes", "mins": "minutes",
                 "%": "percent", "per cent": "percent"}

_QUANTITY = re.compile(
    r"^(?P<currency>US\$|\$|£|€|¥|₹)?\s*"
    r"(?P<number>[-−–]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?)\s*"
    r"(?P<scale>thousand|million|billion|trillion)?\s*"
    r"(?P<unit>%|per cent|sq km|sq mi|square (?:kilometres|kilometers|miles)|[^\W\d_][\w²³/]*)?$",
    re.IGNORECASE,
)
_ORDINAL_SUFFIX = {"st", "nd", "rd", "th"}
_PARENS = re.compile(r"\([^()]*\)")


def parse_quantity(text: str, *, default_unit: str | None = None) -> tuple[float, str | None] | None:
    """(number, unit) when the text, ignoring parenthesised notes, is one quantity; else None.

    Ordinals (``30th``) are ranks, not quantities. A currency symbol becomes its ISO
    code as the unit; ``default_unit`` comes from the key (``area_km2``).
    """
    text = " ".join(_PARENS.sub(" ", text).split()).strip(" ,;")
    match = _QUANTITY.match(text)
    if not match:
        return None
    unit = match.group("unit")
    if unit and unit.lower() in _ORDINAL_SUFFIX:
        return None
    number = float(match.group("number").replace(",", "").replace("−", "-").replace("–", "-"))
    if match.group("scale"):
        number *= _SCALES[match.group("scale").lower()]
    if match.group("currency"):
        unit = _CURRENCIES[match.group("currency")]
    elif unit:
        unit = _UNIT_ALIASES.get(unit.lower(), unit)
    return number, unit or default_unit
