"""Dates and numbers: date keys, ISO dates, quantities."""

from __future__ import annotations

import pytest

from reagent_local.dates import (
    MONTH_INDEX, MONTHS, YEAR, date_from_parts, date_key, display_date, iso_date, iso_parts, numbers_in,
    parse_date_text, parse_quantity,
)


def test_month_names_and_index() -> None:
    assert len(MONTHS) == 12 and MONTHS[1] == "February"
    assert MONTH_INDEX["february"] == MONTH_INDEX["feb"] == 2 and MONTH_INDEX["sept"] == MONTH_INDEX["sep"] == 9
    assert "march" in MONTH_INDEX and "mar" in MONTH_INDEX and "ma" not in MONTH_INDEX


def test_year_pattern() -> None:
    assert YEAR.findall("born 1809, died 1865; 2024 and 2099") == ["1809", "1865", "2024", "2099"]
    assert YEAR.findall("in 999, 2100, 3000 or 12345") == []


@pytest.mark.parametrize(("answer", "key"), [
    ("12 March 1950", (1950, 3, 12)),
    ("March 12, 1950", (1950, 3, 12)),
    ("1950-03-12", (1950, 3, 12)),
    ("March 12th, 1950", (1950, 3, 12)),
    ("March 1950", (1950, 3, 0)),
    ("1950", (1950, 0, 0)),
    ("12 1950", (1950, 0, 0)),  # a day counts only with a month
    ("Mar 12, 1950", (1950, 0, 0)),  # abbreviations are not read here ("Mar del Plata")
    ("unknown", None),
    ("March 12", None),
])
def test_date_key(answer: str, key: tuple | None) -> None:
    assert date_key(answer) == key


def test_numbers_in() -> None:
    assert numbers_in("1,200 people and 3.5 km") == [1200.0, 3.5]
    assert numbers_in("none") == []


@pytest.mark.parametrize(("parts", "iso"), [
    ((1809, 2, 12), "1809-02-12"), ((1861, 3, None), "1861-03"), ((1834, None, None), "1834"),
    ((-383, None, None), "-0383"), ((1900, 2, 30), None), ((1900, 13, None), None), ((1900, None, 4), None),
])
def test_iso_date_and_back(parts: tuple, iso: str | None) -> None:
    assert iso_date(*parts) == iso
    if iso is not None:
        assert iso_parts(iso) == parts


def test_iso_parts_rejects_other_text() -> None:
    assert iso_parts("February 12, 1809") is None and iso_parts("1809-2-12") is None


def test_display_date() -> None:
    assert display_date(1809, 2, 12) == "February 12, 1809"
    assert display_date(1809, 2, 12, day_first=True) == "12 February 1809"
    assert display_date(1861, 3, None) == "March 1861" and display_date(1834, None, None) == "1834"
    assert display_date(-383, None, None) == "384 BC"


def test_date_from_parts() -> None:
    assert date_from_parts(["1809", "2", "12"]) == ("1809-02-12", "February 12, 1809")
    assert date_from_parts(["1997", "1", "17"], day_first=True) == ("1997-01-17", "17 January 1997")
    assert date_from_parts(["1861", "March"]) == ("1861-03", "March 1861")
    assert date_from_parts(["1950", ""]) == ("1950", "1950")
    assert date_from_parts(["1941", "13", "24"]) is None and date_from_parts(["x"]) is None


@pytest.mark.parametrize(("text", "allow_year", "iso"), [
    ("March 4, 1861", False, "1861-03-04"),
    ("5 July 1962", False, "1962-07-05"),
    ("Sept. 5, 1962", False, "1962-09-05"),
    ("April 1709", False, "1709-04"),
    ("1809-02-12", False, "1809-02-12"),
    ("December 21, 1968, 12:51:00 UTC", False, "1968-12-21"),
    ("322 BC (aged 62)", True, "-0321"),
    ("c. 1500", True, "1500"),
    ("1834", True, "1834"),
    ("1834", False, None),  # a bare number is a date only for date relations
    ("Spain", True, None),
    ("Spain 1962", False, None),
    ("February 30, 1900", False, None),
])
def test_parse_date_text(text: str, allow_year: bool, iso: str | None) -> None:
    assert parse_date_text(text, allow_year=allow_year) == iso


@pytest.mark.parametrize(("text", "expected"), [
    # statement values (formerly core.knowledge.parse_quantity)
    ("508,000", (508000.0, None)),
    ("1,600,000", (1600000.0, None)),
    ("1.6 million people", (1600000.0, "people")),
    ("2 bn", (2e9, None)),
    ("3 mn", (3e6, None)),
    ("3.5 km2", (3.5, "km2")),
    ("12%", (12.0, "percent")),
    ("-4", (-4.0, None)),
    (".5", (0.5, None)),
    ("12 March 1950", None),
    ("Los Angeles", None),
    ("1,23", None),
    # infobox values (formerly kg.numbers.parse_quantity)
    ("4,858,979 (2015 est.)", (4858979.0, None)),
    ("$599.83 billion", (599.83e9, "USD")),
    ("US$5", (5.0, "USD")),
    ("£3 trillion", (3e12, "GBP")),
    ("100 minutes", (100.0, "minutes")),
    ("100 min", (100.0, "minutes")),
    ("40.5% (2006 est.)", (40.5, "percent")),
    ("7 per cent", (7.0, "percent")),
    ("1,000 km²", (1000.0, "km2")),
    ("52 square miles", (52.0, "sq mi")),
    ("−6", (-6.0, None)),
    ("–6", (-6.0, None)),
    ("30th", None),
    ("negligible", None),
    ("Hodgenville, Kentucky", None),
    ("+213", None),  # a calling code, not a quantity
    ("25 years old", None),  # one word of unit at most
])
def test_parse_quantity(text: str, expected: tuple | None) -> None:
    got = parse_quantity(text)
    if expected is None:
        assert got is None
    else:
        assert got is not None and got[0] == pytest.approx(expected[0]) and got[1] == expected[1]


def test_parse_quantity_takes_the_unit_from_the_key_when_the_value_has_none() -> None:
    assert parse_quantity("2381741", default_unit="km2") == (2381741.0, "km2")
    assert parse_quantity("12 miles", default_unit="km2") == (12.0, "miles")
