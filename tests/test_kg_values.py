"""Infobox value cleaning: links, date templates, lists and references, on hand-written wikitext."""

from __future__ import annotations

import pytest

from reagent_local.kg.values import DateValue, Link, Renderer, canonical_title, entity_links, item_text


def render(wikitext: str) -> list[list]:
    return Renderer().items(wikitext)


def test_piped_link_keeps_target_and_shown_text_and_drops_reference() -> None:
    items = render("[[Montgomery, Alabama|Montgomery]]<ref>{{cite web|url=http://x|title=T}}</ref>")
    assert items == [[Link("Montgomery, Alabama", "Montgomery")]]


@pytest.mark.parametrize(
    ("wikitext", "iso", "shown"),
    [
        ("{{birth date|1941|5|24}}", "1941-05-24", "May 24, 1941"),
        ("{{Birth date and age|df=yes|1941|5|24}}", "1941-05-24", "24 May 1941"),
        ("{{death date and age|1865|4|15|1809|2|12}}", "1865-04-15", "April 15, 1865"),
        ("{{film date|df=yes|1997|1|17|[[Spain]]}}", "1997-01-17", "17 January 1997"),
        ("{{start date|1861|3}}", "1861-03", "March 1861"),
        ("{{birth year and age|1950}}", "1950", "1950"),
    ],
)
def test_date_templates(wikitext: str, iso: str, shown: str) -> None:
    (item,) = render(wikitext)
    dates = [t for t in item if isinstance(t, DateValue)]
    assert dates == [DateValue(iso, shown)]


def test_date_template_with_invalid_month_is_not_a_date() -> None:
    (item,) = render("{{birth date|1941|13|24}}")
    assert not any(isinstance(t, DateValue) for t in item)


def test_lists_split_into_items() -> None:
    starring = render("{{ubl|[[Núria Espert]]|[[Rosa Maria Sardà]]|Anna Lizaran}}")
    assert [item_text(i) for i in starring] == ["Núria Espert", "Rosa Maria Sardà", "Anna Lizaran"]
    assert [item_text(i) for i in render("Lawyer<br />Politician")] == ["Lawyer", "Politician"]
    bullets = render("{{Plainlist}}\n* English 95.1%\n* Spanish 3.1%\n")
    assert [item_text(i) for i in bullets] == ["English 95.1%", "Spanish 3.1%"]
    assert [item_text(i) for i in render("{{hlist|[[Arabic]]|[[Berber languages|Berber]]}}")] == ["Arabic", "Berber"]


def test_markup_is_removed_from_text() -> None:
    (item,) = render("'''''Actrius''''' <small>(1997)</small>&nbsp;film<!-- note -->{{efn|x}}")
    assert item_text(item) == "Actrius (1997) film"
    (item,) = render("<center>\"The National Anthem\"")  # an unclosed tag parses as text
    assert item_text(item) == '"The National Anthem"'


def test_images_categories_and_unknown_templates_are_dropped_and_counted() -> None:
    renderer = Renderer()
    items = renderer.items("[[File:Flag.svg|20px]] [[Category:States]] Spain {{made up template|x}}")
    assert [item_text(i) for i in items] == ["Spain"]
    assert renderer.dropped_templates["made up template"] == 1


def test_wrapper_templates_render_their_text() -> None:
    assert Renderer().text("{{nowrap|[[Unitary state|Unitary]] republic}}") == "Unitary republic"
    assert Renderer().text("{{lang|fr|La Marseillaise}}") == "La Marseillaise"
    assert Renderer().text("{{convert|1300|mi|km}}") == "1300 mi"
    (item,) = render("{{marriage|[[Mary Todd Lincoln|Mary Todd]]|November 4, 1842|1865}}")
    assert item == [Link("Mary Todd Lincoln", "Mary Todd")]


def test_canonical_title() -> None:
    assert canonical_title("montgomery,_Alabama#History") == "Montgomery, Alabama"
    assert canonical_title(":Category:Cities") == "Category:Cities"


@pytest.mark.parametrize(
    ("wikitext", "targets"),
    [
        ("[[Hodgenville, Kentucky]], U.S.", ["Hodgenville, Kentucky"]),
        ("[[Lincoln Tomb]], [[Oak Ridge Cemetery]]", ["Lincoln Tomb", "Oak Ridge Cemetery"]),
        ("[[Robert J. Bentley]] ([[Republican Party (United States)|R]])", ["Robert J. Bentley"]),
        ("The [[Northern flicker|Yellowhammer]] State, Heart of [[Dixie]]", None),  # prose
        ("Spain", None),
    ],
)
def test_entity_links(wikitext: str, targets: list[str] | None) -> None:
    (item,) = render(wikitext)
    links = entity_links(item)
    assert (None if links is None else [link.target for link in links]) == targets
