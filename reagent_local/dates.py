"""Dates and numbers in text: month names, years, comparable date keys, ISO dates, quantities.

ISO strings keep the precision the source gives: ``1809-02-12``, ``1861-03`` or
``1834``; years before the common era use astronomical numbering (384 BC -> ``-0383``).
"""

from __future__ import annotations

import datetime
import re

MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August",
          "September", "October", "November", "December"]
_FULL_MONTHS = {m.lower(): i for i, m in enumerate(MONTHS, 1)}
MONTH_INDEX: dict[str, int] = _FULL_MONTHS | {m[:3].lower(): i for i, m in enumerate(MONTHS, 1)} | {"sept": 9}

YEAR = re.compile(r"\b(1\d{3}|20\d{2})\b")  # a year of the last millennium or this one, in running text

_ISO_IN_TEXT = re.compile(r"\b(1\d{3}|20\d{2})-(\d{1,2})-(\d{1,2})\b")
_DAY = re.compile(r"\b(\d{1,2})(?:st|nd|rd|th)?\b")
_NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")
_ISO = re.compile(r"(-?\d{4})(?:-(\d{2})(?:-(\d{2}))?)?")

_MONTH = r"(?P<month>[A-Za-z]{3,9})\.?"
_PATTERNS = [
    re.compile(rf"^{_MONTH}\s+(?P<day>\d{{1,2}}),?\s+(?P<year>\d{{1,4}})$"),  # February 12, 1809
    re.compile(rf"^(?P<day>\d{{1,2}})\s+{_MONTH},?\s+(?P<year>\d{{1,4}})$"),  # 12 February 1809
    re.compile(rf"^{_MONTH},?\s+(?P<year>\d{{3,4}})$"),  # March 1861
    re.compile(r"^(?P<year>\d{4})-(?P<month>\d{2})(?:-(?P<day>\d{2}))?$"),  # 1809-02-12
]
_BARE_YEAR = re.compile(r"^(?:c\.\s*|circa\s+)?(?P<year>\d{1,4})\s*(?P<era>BC|BCE|AD|CE)?$", re.IGNORECASE)
_PARENS = re.compile(r"\([^()]*\)")
_TIME = re.compile(r",?\s+\d{1,2}:\d{2}(?::\d{2})?\s*(?:UTC|GMT|Z)?$", re.IGNORECASE)

_CURRENCIES = {"US$": "USD", "$": "USD", "£": "GBP", "€": "EUR", "¥": "JPY", "₹": "INR"}
_SCALES = {"thousand": 1e3, "million": 1e6, "mn": 1e6, "billion": 1e9, "bn": 1e9, "trillion": 1e12}
_UNIT_ALIASES = {"km²": "km2", "sq km": "km2", "square kilometres": "km2", "square kilometers": "km2",
                 "mi²": "sq mi", "square miles": "sq mi", "min": "minutes", "mins": "minutes",
                 "%": "percent", "per cent": "percent"}
_QUANTITY = re.compile(
    r"^(?P<currency>US\$|\$|£|€|¥|₹)?\s*"
    r"(?P<number>[-−–]?(?:(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|\.\d+))\s*"
    r"(?:(?P<scale>thousand|million|mn|billion|bn|trillion)\b)?\s*"
    r"(?P<unit>%|per cent|sq km|sq mi|square (?:kilometres|kilometers|miles)|[^\W\d_][\w²³/]*)?$",
    re.IGNORECASE,
)
_ORDINAL_SUFFIX = {"st", "nd", "rd", "th"}


# -- dates in answers -------------------------------------------------------------------------

def date_key(answer: str) -> tuple[int, int, int] | None:
    """(year, month, day) of a date answer, 0 where a part is not given; None without a year.

    Reads "12 March 1950", "March 12, 1950", "1950-03-12", "March 1950" and "1950";
    only full month names count ("Mar del Plata" names no month).
    """
    iso = _ISO_IN_TEXT.search(answer)
    if iso:
        return int(iso.group(1)), int(iso.group(2)), int(iso.group(3))
    year = YEAR.search(answer)
    if not year:
        return None
    words = re.findall(r"[a-z]+", answer.lower())
    month = next((_FULL_MONTHS[w] for w in words if w in _FULL_MONTHS), 0)
    rest = answer[: year.start()] + " " + answer[year.end():]
    day = next((int(d) for d in _DAY.findall(rest) if 1 <= int(d) <= 31), 0) if month else 0
    return int(year.group(1)), month, day


def numbers_in(text: str) -> list[float]:
    """Every number written in digits, thousands separators dropped: "1,200 and 3.5" -> [1200.0, 3.5]."""
    return [float(n.replace(",", "")) for n in _NUMBER.findall(text)]


# -- ISO dates ----------------------------------------------------------------------------------

def iso_date(year: int, month: int | None = None, day: int | None = None) -> str | None:
    """ISO 8601 string at the given precision, or None when the parts are not a date."""
    if month is not None and not 1 <= month <= 12:
        return None
    if day is not None:
        if month is None:
            return None
        try:
            datetime.date(max(year, 1), month, day)  # February 30 is not a date
        except ValueError:
            return None
    text = f"{year:05d}" if year < 0 else f"{year:04d}"
    if month is not None:
        text += f"-{month:02d}"
        if day is not None:
            text += f"-{day:02d}"
    return text


def iso_parts(iso: str) -> tuple[int, int | None, int | None] | None:
    """Inverse of iso_date: ``1809-02-12`` -> (1809, 2, 12), ``-0383`` -> (-383, None, None)."""
    match = _ISO.fullmatch(iso)
    if not match:
        return None
    year, month, day = match.groups()
    return int(year), int(month) if month else None, int(day) if day else None


def display_date(year: int, month: int | None, day: int | None, *, day_first: bool = False) -> str:
    """``February 12, 1809`` (or ``12 February 1809`` when day_first), ``March 1861``, ``1834``."""
    shown_year = f"{1 - year} BC" if year <= 0 else str(year)
    if month is None:
        return shown_year
    if day is None:
        return f"{MONTHS[month - 1]} {shown_year}"
    if day_first:
        return f"{day} {MONTHS[month - 1]} {shown_year}"
    return f"{MONTHS[month - 1]} {day}, {shown_year}"


def date_from_parts(parts: list[str], *, day_first: bool = False) -> tuple[str, str] | None:
    """(iso, display) from a date template's year/month/day parameters, or None."""
    numbers: list[int] = []
    for part in parts:
        part = part.strip()
        if not part:
            break
        if part.isdigit():
            numbers.append(int(part))
        elif part.lower() in MONTH_INDEX and len(numbers) == 1:
            numbers.append(MONTH_INDEX[part.lower()])
        else:
            break
    if not numbers:
        return None
    year, month, day = numbers[0], *(numbers[1:3] + [None, None])[:2]
    iso = iso_date(year, month, day)
    if iso is None:
        return None
    return iso, display_date(year, month, day, day_first=day_first)


def parse_date_text(text: str, *, allow_year: bool = False) -> str | None:
    """ISO date for plain text such as ``March 4, 1861`` or ``5 July 1962``; None otherwise.

    Parenthesised qualifiers are ignored. A bare year counts only when allow_year
    (the relation is a date, so ``1834`` means the year 1834, not a quantity).
    """
    text = " ".join(_PARENS.sub(" ", text).split()).strip(" ,;")
    text = _TIME.sub("", text)  # "December 21, 1968, 12:51:00 UTC": the day is what we compare
    for pattern in _PATTERNS:
        match = pattern.match(text)
        if not match:
            continue
        groups = match.groupdict()
        month_text = groups.get("month")
        month = int(month_text) if month_text and month_text.isdigit() else MONTH_INDEX.get((month_text or "").lower())
        if month is None:
            return None
        day = int(groups["day"]) if groups.get("day") else None
        return iso_date(int(groups["year"]), month, day)
    if allow_year:
        match = _BARE_YEAR.match(text)
        if match:
            year = int(match.group("year"))
            if (match.group("era") or "").upper() in {"BC", "BCE"}:
                year = 1 - year
            return iso_date(year)
    return None


# -- quantities ---------------------------------------------------------------------------------

def parse_quantity(text: str, *, default_unit: str | None = None) -> tuple[float, str | None] | None:
    """(number, unit) when the text, ignoring parenthesised notes, is one quantity; else None.

    ``508,000`` -> (508000.0, None); ``1.6 million people`` -> (1600000.0, 'people');
    ``$599.83 billion`` -> (5.9983e11, 'USD'); ``40.5%`` -> (40.5, 'percent'). A
    currency symbol becomes its ISO code; the unit is one word or a known area unit,
    spelt as written unless it has a canonical alias. Ordinals (``30th``) are ranks,
    not quantities. ``default_unit`` comes from the key (``area_km2``).
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
