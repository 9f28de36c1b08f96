"""`reagent ask` and `reagent models` from the command line: user errors are one clear line."""

import os
import subprocess
import sys
from pathlib import Path


def reagent(*args: str, home: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "REAGENT_HOME": str(home), "HF_HUB_OFFLINE": "1"}
    return subprocess.run([sys.executable, "-m", "reagent_local", *args], capture_output=True, text=True,
                          env=env, timeout=120)


def assert_clean_error(result: subprocess.CompletedProcess, *needles: str) -> None:
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    for needle in needles:
        assert needle in result.stderr, result.stderr


def test_empty_question(tmp_path):
    assert_clean_error(reagent("ask", "   ", home=tmp_path), "the question is empty")


def test_huge_question(tmp_path):
    assert_clean_error(reagent("ask", "whyy" * 25_000, home=tmp_path), "100,000 characters", "max_question_chars")


def test_model_not_pulled_says_which_command_pulls_it(tmp_path):
    assert_clean_error(reagent("ask", "Who directed Actrius?", home=tmp_path),
                       "not pulled", "reagent models pull qwen2.5-coder-1.5b")


def test_missing_index_says_how_to_build_it(tmp_path):
    (tmp_path / "models").mkdir()
    fake = tmp_path / "tiny.gguf"
    fake.write_bytes(b"GGUF" + b"\0" * 64)
    assert_clean_error(reagent("ask", "Who directed Actrius?", "--model", str(fake), "--index", "nope", home=tmp_path),
                       "nope")


def test_unknown_model_name_lists_known_ones(tmp_path):
    assert_clean_error(reagent("models", "path", "gpt-17", home=tmp_path), "unknown model", "qwen2.5-coder-1.5b")


def test_verify_reports_a_corrupt_model(tmp_path):
    models = tmp_path / "models"
    models.mkdir()
    (models / "smollm2-135m-instruct-q4_1.gguf").write_bytes(b"GGUF" + b"x" * 100)
    result = reagent("models", "verify", home=tmp_path)
    assert_clean_error(result, "failed verification")
    assert "size 104 bytes" in result.stdout


def test_unknown_role_in_role_models_is_a_config_error(tmp_path):
    (tmp_path / "reagent.toml").write_text('[pipeline.role_models]\nplanner = "qwen2.5-coder-0.5b"\n')
    env = {**os.environ, "REAGENT_HOME": str(tmp_path), "REAGENT_CONFIG": str(tmp_path / "reagent.toml")}
    fake = tmp_path / "tiny.gguf"
    fake.write_bytes(b"GGUF")
    result = subprocess.run([sys.executable, "-m", "reagent_local", "ask", "Who?", "--model", str(fake)],
                            capture_output=True, text=True, env=env, timeout=120)
    assert_clean_error(result, "unknown role(s) in pipeline.role_models", "decomposer")
