"""Benchmark readers: official record formats, supporting paragraphs, the open corpus, bad files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reagent_local.datasets import Paragraph, detect_dataset, load_questions, open_corpus
from reagent_local.errors import DatasetFormatError

HOTPOT = [
    {
        "_id": "h1", "question": "Which band had the drummer?", "answer": "Rush", "type": "bridge", "level": "hard",
        "supporting_facts": [["Neil Peart", 1], ["Counterparts", 0]],
        "context": [
            ["Counterparts", ["Counterparts is an album by Rush.", " It came out in 1993."]],
            ["Neil Peart", ["Neil Peart was a drummer.", " He played in Rush."]],
            ["Toto", ["Toto is a band."]],
        ],
    },
    {
        "_id": "h2", "question": "Is Toto a band?", "answer": "yes", "type": "comparison", "level": "easy",
        "supporting_facts": [["Toto", 0]],
        "context": [["Toto", ["Toto is a band."]], ["Counterparts", ["Counterparts is an album by Rush.", " It came out in 1993."]]],
    },
]

TWOWIKI = [
    {
        "_id": "w1", "type": "compositional", "question": "Where was the father of X buried?", "answer": "Cork",
        "supporting_facts": [["X", 0], ["Y", 1]],
        "context": [["X", ["X was a barrister.", "His father was Y."]], ["Y", ["Y was a judge.", "Y is buried in Cork."]],
                    ["X", ["X was a barrister.", "His father was Y."]]],
        "evidences": [["X", "father", "Y"], ["Y", "place of burial", "Cork"]],
    }
]

MUSIQUE = [
    {
        "id": "2hop__1_2", "question": "What is the seat of the county of V?", "answer": "Stanley",
        "answer_aliases": ["Stanley, ND"], "answerable": True,
        "paragraphs": [
            {"idx": 0, "title": "Stanley", "paragraph_text": "Stanley is the county seat.", "is_supporting": True},
            {"idx": 1, "title": "Stanley", "paragraph_text": "Stanley is also a first name.", "is_supporting": False},
            {"idx": 2, "title": "V Township", "paragraph_text": "V Township is in Mountrail County.", "is_supporting": True},
        ],
        "question_decomposition": [],
    },
    {
        "id": "3hop1__9_8_7", "question": "Unanswerable?", "answer": "", "answer_aliases": [], "answerable": False,
        "paragraphs": [{"idx": 0, "title": "Stanley", "paragraph_text": "Stanley is the county seat.", "is_supporting": False}],
        "question_decomposition": [],
    },
]


def _write_json(tmp_path: Path, name: str, data: list) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def _write_jsonl(tmp_path: Path, name: str, rows: list) -> Path:
    path = tmp_path / name
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


def test_hotpotqa_joins_sentences_and_resolves_supporting_paragraphs(tmp_path):
    path = _write_json(tmp_path, "hotpot.json", HOTPOT)
    assert detect_dataset(path) == "hotpotqa"
    first = load_questions(path)[0]
    assert first.dataset == "hotpotqa" and first.type == "bridge" and first.answers == ("Rush",)
    assert first.paragraphs[0] == Paragraph("Counterparts", "Counterparts is an album by Rush. It came out in 1993.")
    assert first.supporting_titles == ("Neil Peart", "Counterparts")
    assert [p.title for p in first.supporting] == ["Neil Peart", "Counterparts"]
    assert first.supporting[0].text == "Neil Peart was a drummer. He played in Rush."


def test_2wiki_adds_spaces_between_sentences_and_drops_duplicate_paragraphs(tmp_path):
    path = _write_json(tmp_path, "dev.json", TWOWIKI)
    assert detect_dataset(path) == "2wiki"
    (question,) = load_questions(path)
    assert question.paragraphs == (
        Paragraph("X", "X was a barrister. His father was Y."),
        Paragraph("Y", "Y was a judge. Y is buried in Cork."),
    )
    assert [p.title for p in question.supporting] == ["X", "Y"]


def test_musique_keeps_paragraphs_that_share_a_title_and_skips_unanswerable(tmp_path):
    path = _write_jsonl(tmp_path, "musique.jsonl", MUSIQUE)
    assert detect_dataset(path) == "musique"
    questions = load_questions(path)
    assert [q.id for q in questions] == ["2hop__1_2"]
    q = questions[0]
    assert q.type == "2hop" and q.answers == ("Stanley", "Stanley, ND")
    assert len(q.paragraphs) == 3
    assert q.supporting == (Paragraph("Stanley", "Stanley is the county seat."),
                            Paragraph("V Township", "V Township is in Mountrail County."))
    assert len(load_questions(path, answerable_only=False)) == 2


def test_open_corpus_dedups_by_title_and_text_not_title(tmp_path):
    hotpot = load_questions(_write_json(tmp_path, "h.json", HOTPOT))
    assert [p.title for p in open_corpus(hotpot)] == ["Counterparts", "Neil Peart", "Toto"]
    musique = load_questions(_write_jsonl(tmp_path, "m.jsonl", MUSIQUE), answerable_only=False)
    corpus = open_corpus(musique)
    assert [p.title for p in corpus] == ["Stanley", "Stanley", "V Township"]


@pytest.mark.parametrize(
    "content, message",
    [
        ("", "empty"),
        ("<html><body>Not found</body></html>", "line 1 is not JSON"),
        ('{"id": "a", "paragraphs": []}\n{broken\n', "line 2 is not JSON"),
        ("[1, 2]", "JSON objects"),
        ('[{"foo": 1}]', "match none"),
        ('[{"_id": "x", "context": [], "question": "q"}', "invalid JSON"),
    ],
)
def test_bad_files_name_the_file_and_the_problem(tmp_path, content, message):
    path = tmp_path / "bad.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(DatasetFormatError) as info:
        load_questions(path)
    assert message in str(info.value) and str(path) in str(info.value)


def test_missing_field_and_wrong_dataset_are_reported(tmp_path):
    broken = [dict(HOTPOT[0])]
    del broken[0]["question"]
    with pytest.raises(DatasetFormatError, match="record 1 lacks"):
        load_questions(_write_json(tmp_path, "h.json", broken))
    with pytest.raises(DatasetFormatError, match="looks like a musique file"):
        load_questions(_write_jsonl(tmp_path, "m.jsonl", MUSIQUE), "hotpotqa")
    with pytest.raises(DatasetFormatError, match="does not exist"):
        load_questions(tmp_path / "absent.json")


def test_shared_samples_match_their_documented_sizes(shared_data):
    hotpot = load_questions(shared_data / "hotpotqa" / "hotpot_dev_distractor_sample200.json")
    wiki2 = load_questions(shared_data / "2wikimultihopqa" / "dev_distractor_sample464.json")
    musique = load_questions(shared_data / "musique" / "musique_ans_dev_sample100.jsonl")
    assert (len(hotpot), len(wiki2), len(musique)) == (200, 464, 100)
    assert len(open_corpus(hotpot)) == 1971
    assert all(len(q.supporting) == len(q.supporting_titles) for q in hotpot + wiki2)
    corpus = open_corpus(musique)
    titles: dict[str, set[str]] = {}
    for p in corpus:
        titles.setdefault(p.title, set()).add(p.text)
    shared_titles = {t for t, texts in titles.items() if len(texts) > 1}
    assert len(shared_titles) == 100
    supporting = [p for q in musique for p in q.supporting]
    assert len(supporting) == 200
    assert sum(p.title in shared_titles for p in supporting) == 67
