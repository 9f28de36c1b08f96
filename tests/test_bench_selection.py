"""Question selection: ids files, --ids / --exclude-ids filters, unknown ids, the real split files."""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass
from pathlib import Path

import pytest

from reagent_local.bench.runner import select_sample
from reagent_local.bench.selection import (
    as_id_list, filter_questions, parse_ids, read_ids_file, selection_config, selection_slug,
)
from reagent_local.errors import BenchRunError


@dataclass(frozen=True)
class Q:
    id: str


QUESTIONS = [Q(f"q{i}") for i in range(10)]
FILE = Path("/data/h.json")


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_parse_ids_skips_blanks_comments_and_repeats() -> None:
    assert parse_ids("# tune split\nq1\n\n  q2  \r\nq1\n#q3\n") == ["q1", "q2"]


def test_read_ids_file_records_path_and_sha(tmp_path: Path) -> None:
    path = write(tmp_path, "split.txt", "\ufeffq3\nq1\n")
    ids = read_ids_file(path)
    assert ids.ids == ("q3", "q1") and ids.file == str(path.resolve())
    assert ids.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert ids.describe() == {"file": str(path.resolve()), "sha256": ids.sha256, "count": 2}


@pytest.mark.parametrize(("content", "message"), [
    (b"# only a comment\n\n", "lists no question ids"),
    (b"\xff\xfe\x00bad", "is not UTF-8 text"),
])
def test_bad_ids_files_are_user_errors(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "ids.txt"
    path.write_bytes(content)
    with pytest.raises(BenchRunError, match=message) as info:
        read_ids_file(path, "--exclude-ids")
    assert "--exclude-ids" in str(info.value) and str(path) in str(info.value)


def test_missing_ids_file_is_a_user_error(tmp_path: Path) -> None:
    with pytest.raises(BenchRunError, match="cannot read the --ids file"):
        read_ids_file(tmp_path / "nope.txt")


def test_a_list_of_ids_or_a_path_string_both_work(tmp_path: Path) -> None:
    listed = as_id_list(["q2", " q1 ", "q2"], "--ids")
    assert listed.ids == ("q2", "q1") and listed.file is None
    assert listed.sha256 == hashlib.sha256(b"q2\nq1\n").hexdigest()  # what a clean file of them hashes to
    path = write(tmp_path, "ids.txt", "q2\nq1\n")
    assert as_id_list(str(path), "--ids").sha256 == listed.sha256
    assert as_id_list(None, "--ids") is None
    with pytest.raises(BenchRunError, match="empty list"):
        as_id_list([], "--ids")


def test_filters_keep_file_order_and_combine() -> None:
    keep = as_id_list(["q7", "q2", "q5", "q3"], "--ids")
    drop = as_id_list(["q5", "q9"], "--exclude-ids")
    assert filter_questions(QUESTIONS, FILE, ids=keep) == [Q("q2"), Q("q3"), Q("q5"), Q("q7")]
    assert filter_questions(QUESTIONS, FILE, exclude_ids=drop) == [q for q in QUESTIONS if q.id not in ("q5", "q9")]
    assert filter_questions(QUESTIONS, FILE, ids=keep, exclude_ids=drop) == [Q("q2"), Q("q3"), Q("q7")]


def test_unknown_ids_are_named_with_their_count() -> None:
    wanted = as_id_list(["q1", *(f"x{i}" for i in range(7))], "--ids")
    with pytest.raises(BenchRunError) as info:
        filter_questions(QUESTIONS, FILE, ids=wanted)
    message = str(info.value)
    assert "7 of 8 --ids id(s) are not questions of /data/h.json: x0, x1, x2, x3, x4, ..." in message
    assert "x5" not in message
    with pytest.raises(BenchRunError, match="1 of 1 --exclude-ids id.* zz"):
        filter_questions(QUESTIONS, FILE, exclude_ids=as_id_list(["zz"], "--exclude-ids"))


def test_excluding_everything_is_an_error() -> None:
    with pytest.raises(BenchRunError, match="leaves no question"):
        filter_questions(QUESTIONS, FILE, exclude_ids=as_id_list([q.id for q in QUESTIONS], "--exclude-ids"))


def test_sample_is_drawn_from_the_filtered_list_with_the_usual_function() -> None:
    keep = as_id_list([f"q{i}" for i in (9, 1, 4, 6, 8, 2)], "--ids")
    drop = as_id_list(["q4"], "--exclude-ids")
    got = select_sample(QUESTIONS, FILE, 3, 13, keep, drop)
    assert got == random.Random(13).sample([Q("q1"), Q("q2"), Q("q6"), Q("q8"), Q("q9")], 3)
    assert select_sample(QUESTIONS, FILE, 3, 13, None, None) == random.Random(13).sample(QUESTIONS, 3)
    with pytest.raises(BenchRunError, match="asked for 6 questions but the selection .* has only 5"):
        select_sample(QUESTIONS, FILE, 6, 13, keep, drop)


def test_config_entries_and_folder_slug(tmp_path: Path) -> None:
    split = read_ids_file(write(tmp_path, "hotpotqa-test.txt", "q1\n"))
    listed = as_id_list(["q2"], "--exclude-ids")
    assert selection_config(None, None) == {"ids": None, "exclude_ids": None}
    assert selection_config(split, listed)["ids"]["file"].endswith("hotpotqa-test.txt")
    assert selection_slug(split, None) == "ids-hotpotqa-test"
    assert selection_slug(split, listed) == f"ids-hotpotqa-test-minus-{listed.sha256[:8]}"
    assert selection_slug(None, None) == ""


SPLITS = [
    ("hotpotqa", "hotpotqa/hotpot_dev_distractor_sample200.json", 200),
    ("2wiki", "2wikimultihopqa/dev_distractor_sample464.json", 464),
    ("musique", "musique/musique_ans_dev_sample100.jsonl", 100),
]


@pytest.mark.parametrize(("dataset", "name", "total"), SPLITS)
def test_real_split_files_partition_their_sample(shared_data: Path, dataset: str, name: str, total: int) -> None:
    from reagent_local.datasets import load_questions

    split_dir = shared_data / "splits"
    prefix = "2wiki" if dataset == "2wiki" else dataset
    if not (split_dir / f"{prefix}-test.txt").is_file():
        pytest.skip(f"no split files in {split_dir}")
    questions = load_questions(shared_data / name, dataset)
    test = read_ids_file(split_dir / f"{prefix}-test.txt")
    tune = read_ids_file(split_dir / f"{prefix}-tune.txt")
    kept = filter_questions(questions, shared_data / name, ids=test)
    rest = filter_questions(questions, shared_data / name, exclude_ids=tune)
    assert not set(test.ids) & set(tune.ids)
    assert len(test.ids) + len(tune.ids) == len(questions) == total
    assert [q.id for q in kept] == [q.id for q in rest]  # "test" is "everything but tune"
    drawn = select_sample(questions, shared_data / name, 30, 13, test, None)
    assert drawn == random.Random(13).sample(kept, 30) and set(q.id for q in drawn) <= set(test.ids)
