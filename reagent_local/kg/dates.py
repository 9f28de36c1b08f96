"""Dates in infobox values: template parts and plain text to ISO 8601 plus a readable form.

ISO strings keep the precision the source gives: ``1809-02-12``, ``1861-03`` or
``1834``; years before the common era use astronomical numbering (384 BC -> ``-0383``).
"""

from __future__ import annotations

import datetime
import re

MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August",
          "September", "October", "November", "December"]
_MONTH_INDEX = {m.lower(): i + 1 for i, m in enumerate(MONTHS)}
_MONTH_INDEX.update({m[:3].lower(): i + 1 for i, m in enumerate(MONTHS)})
_MONTH_INDEX["sept"] = 9

_MONTH = r"(?P<month>[A-Za-z]{3,9})\.?"
_PATTERNS = [
    re.compile(rf"^{_MONTH}\s+(?P<day>\d{{1,2}}),?\s+(?P<year>\d{{1,4}})$"),  # February 12, 1809
    re.compile(rf"^(?P<day>\d{{1,2}})\s+{_MONTH},?\s+(?P<year>\d{{1,4}})$"),  # 12 February 1809
    re.compile(rf"^{_MONTH},?\s+(?P<year>\d{{3,4}})$"),  # March 1861
    re.compile(r"^(?P<year>\d{4})-(?P<month>\d{2})(?:-(?P<day>\d{2}))?$"),  # 1809-02-12
]
_YEAR = re.compile(r"^(?:c\.\s*|circa\s+)?(?P<year>\d{1,4})\s*(?P<era>BC|BCE|AD|CE)?$", re.IGNORECASE)
_PARENS = re.compile(r"\([^()]*\)")
_TIME = re.compile(r",?\s+\d{1,2}:\d{2}(?::\d{2})?\s*(?:UTC|GMT|Z)?$", re.IGNORECASE)


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
        elif part.lower() in _MONTH_INDEX and len(numbers) == 1:
            numbers.append(_MONTH_INDEX[part.lower()])
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
        month = int(month_text) if month_text and month_text.isdigit() else _MONTH_INDEX.get((month_text or "").lower())
        if month is None:
            return None
        day = int(groups["day"]) if groups.get("day") else None
        return iso_date(int(groups["year"]), month, day)
    if allow_year:
        match = _YEAR.match(text)
        if match:
            year = int(match.group("year"))
            if (match.group("era") or "").upper() in {"BC", "BCE"}:
                year = 1 - year
            return iso_date(year)
    return None
