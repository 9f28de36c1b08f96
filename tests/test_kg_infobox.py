"""Triples from one page's infoboxes, on hand-written wikitext shaped like the real ones."""

from __future__ import annotations

from reagent_local.kg.infobox import MARKUP, Extractor, infobox_sources

COUNTRY = """{{Infobox country
|conventional_long_name = People's Democratic Republic of Algeria
|image_flag = Flag of Algeria.svg
|capital = [[Algiers]]
|largest_city = capital
|leader_title1 = [[President of Algeria|President]]
|leader_name1 = [[Abdelaziz Bouteflika]]
|population_estimate = 40,400,000<ref name="ONS">{{cite web |url=http://x |title=ONS}}</ref>
|area_km2 = 2381741
|official_languages = {{hlist |[[Arabic]]<ref>x</ref> |[[Berber languages|Berber]]}}
}}
'''Algeria''' is a country. {{Infobox U.S. Cabinet |State = [[William H. Seward]] }}"""


def by_relation(triples):
    out: dict[str, list] = {}
    for t in triples:
        out.setdefault(t.relation, []).append(t)
    return out


def test_country_infobox() -> None:
    triples = Extractor().page_triples("Algeria", COUNTRY)
    rel = by_relation(triples)
    assert [t.value for t in rel["capital"]] == ["Algiers"]
    assert [t.value for t in rel["largest_city"]] == ["Algiers"]  # "capital" resolved to the capital's value
    assert rel["largest_city"][0].raw_key == "largest_city"
    assert [t.value for t in rel["president"]] == ["Abdelaziz Bouteflika"]
    (population,) = rel["population"]
    assert population.value == "40,400,000" and population.value_number == 40_400_000
    assert rel["area"][0].unit == "km2"
    assert [(t.value, t.display) for t in rel["official_language"]] == [("Arabic", None), ("Berber languages", "Berber")]
    assert "image_flag" not in {t.raw_key for t in triples}
    assert "state" not in rel  # the cabinet infobox is about the cabinet, not the country
    assert all(t.subject == "Algeria" and t.passage_id == "Algeria#0" for t in triples)
    assert not [t for t in triples if any(m in t.value for m in MARKUP)]


def test_capital_reference_without_a_capital_is_dropped_and_counted() -> None:
    extractor = Extractor()
    triples = extractor.page_triples("Nowhere", "{{Infobox country|largest_city = capital|demonym = Nowherian}}")
    assert [t.relation for t in triples] == ["demonym"]
    assert extractor.unresolved_capital == 1


def test_person_infobox() -> None:
    page = """{{Infobox officeholder
 | name = Abraham Lincoln
 | birth_date = {{birth date|1809|2|12}}
 | birth_place = [[Hodgenville, Kentucky]], U.S.
 | death_date = {{death date and age|1865|4|15|1809|2|12}}
 | death_place = [[Petersen House (Washington, D.C.)|Petersen House]],<br />[[Washington, D.C.]], U.S.
 | spouse = {{marriage|[[Mary Todd Lincoln|Mary Todd]]|November 4, 1842|1865|reason=his death}}
 | profession = Lawyer<br />Politician
 | calling_code = [[Telephone numbers in Nowhere|+999]]
}}"""
    rel = by_relation(Extractor().page_triples("Abraham Lincoln", page))
    (birth,) = rel["birth_date"]
    assert (birth.value, birth.value_date) == ("February 12, 1809", "1809-02-12")
    assert [t.value for t in rel["birth_place"]] == ["Hodgenville, Kentucky"]
    assert rel["death_date"][0].value_date == "1865-04-15"
    assert [t.value for t in rel["death_place"]] == ["Petersen House (Washington, D.C.)", "Washington, D.C."]
    assert [(t.value, t.display) for t in rel["spouse"]] == [("Mary Todd Lincoln", "Mary Todd")]
    assert [t.value for t in rel["profession"]] == ["Lawyer", "Politician"]
    assert [t.value for t in rel["calling_code"]] == ["+999"]  # the link only explains the code


def test_entity_relation_drops_numbers_and_date_relation_drops_places() -> None:
    page = """{{Infobox person
|LargestCity = [[Birmingham, Alabama|Birmingham]] <br />212,038 <small>(2012 estimate)</small>
|death_date = 322 BC (aged 62)<br />[[Euboea]]
}}"""
    rel = by_relation(Extractor().page_triples("X", page))
    assert [(t.value, t.display) for t in rel["largest_city"]] == [("Birmingham, Alabama", "Birmingham")]
    assert [(t.value, t.value_date) for t in rel["death_date"]] == [("322 BC (aged 62)", "-0321")]


def test_nested_infobox_is_extracted_once() -> None:
    page = "{{Infobox film|director = [[A]]|embed = {{Infobox person|spouse = [[B]]}}}} text"
    assert len(infobox_sources(page)) == 2
    triples = Extractor().page_triples("F", page)
    assert sorted((t.relation, t.value) for t in triples) == [("director", "A"), ("spouse", "B")]


def test_duplicate_values_are_kept_once_and_pages_without_infobox_give_nothing() -> None:
    page = "{{Infobox book|author = [[Graeme Base]]}}{{Infobox publication|author = [[Graeme Base]]}}"
    assert [t.value for t in Extractor().page_triples("Animalia (book)", page)] == ["Graeme Base"]
    assert Extractor().page_triples("Plain", "'''Plain''' has {{convert|3|km}} and no infobox.") == []
