"""Aligned prompt evaluation: an answer is a function of its prompt, not of the prompts evaluated before it."""

import pytest

from conftest import pulled_model
from reagent_local.agents import PROMPTS
from reagent_local.agents.schemas import Decomposition, SubAnswer
from reagent_local.runtime.llm import LlamaModel
from reagent_local.runtime.prefill import BlockSchedule, aligned_blocks, reusable_prefix
from reagent_local.runtime.prompts import render_messages


def test_reuse_stops_at_a_block_boundary_inside_the_block_evaluated_part():
    assert reusable_prefix(matched=200, stable=640, block=64) == 192
    assert reusable_prefix(matched=640, stable=640, block=64) == 640
    # the tail of the last prompt (a short last block, or generated tokens) is never reused
    assert reusable_prefix(matched=700, stable=640, block=64) == 640
    assert reusable_prefix(matched=63, stable=640, block=64) == 0
    assert reusable_prefix(matched=500, stable=0, block=64) == 0


def test_blocks_are_aligned_to_position_zero():
    tokens = list(range(150))
    assert [len(b) for b in aligned_blocks(128, tokens, 64)] == [64, 64, 22]
    assert [b[0] for b in aligned_blocks(128, tokens, 64)] == [0, 64, 128]
    assert list(aligned_blocks(0, [], 64)) == []
    with pytest.raises(ValueError, match="not a boundary of the prefill blocks"):
        list(aligned_blocks(100, tokens, 64))


def test_wide_blocks_start_at_their_own_size_and_keep_boundaries_fixed_by_position():
    schedule = BlockSchedule(64, 256)
    assert [schedule.floor(n) for n in (63, 64, 200, 255, 256, 300, 511, 512, 800)] == [0, 64, 192, 192, 256, 256, 256, 512, 768]
    assert schedule.is_boundary(192) and schedule.is_boundary(512) and not schedule.is_boundary(320)
    tokens = list(range(700))
    assert [len(b) for b in aligned_blocks(0, tokens, schedule)] == [64, 64, 64, 64, 256, 188]
    # resumed from a cached boundary, the blocks are the ones a cold evaluation makes
    assert [len(b) for b in aligned_blocks(192, tokens[192:], schedule)] == [64, 256, 188]
    assert [len(b) for b in aligned_blocks(512, tokens[512:], schedule)] == [188]
    assert reusable_prefix(matched=600, stable=700, block=schedule) == 512
    assert reusable_prefix(matched=230, stable=700, block=schedule) == 192
    with pytest.raises(ValueError, match="not a boundary"):
        list(aligned_blocks(320, tokens, schedule))
    assert BlockSchedule(64).floor(700) == 640 and BlockSchedule(64, 256).label() == "64/256"
    for bad in ((64, 100), (64, 32), (0, 0)):
        with pytest.raises(ValueError):
            BlockSchedule(*bad)


def test_a_wide_block_that_is_not_a_multiple_is_a_config_error(tmp_path):
    from reagent_local.config import load_config
    from reagent_local.errors import ConfigError
    from reagent_local.reasoning.wiring import load_llm

    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF" + (3).to_bytes(4, "little") + b"\0" * 64)
    assert load_llm(str(gguf), load_config(env={})).prefill_schedule() == BlockSchedule(64, 256)
    assert load_llm(str(gguf), load_config({"llm.prefill_wide_block": 0}, env={})).prefill_schedule() == BlockSchedule(64)
    with pytest.raises(ConfigError, match="multiple"):
        load_llm(str(gguf), load_config({"llm.prefill_wide_block": 100}, env={}))


def _decompose(question: str) -> list[dict[str, str]]:
    return render_messages(PROMPTS, "decompose", question=question)


def _answer(passages: str, question: str) -> list[dict[str, str]]:
    return render_messages(PROMPTS, "answer", evidence=passages, question=question)


def _output(model: LlamaModel, messages, schema) -> tuple[str, tuple]:
    call = model.generate_json(messages, schema).call
    return call.raw, call.token_logprobs


@pytest.mark.slow
def test_a_prompt_gives_the_same_tokens_and_probabilities_whatever_ran_before():
    # The 1.5B model's Q4_K kernels compute a token differently in a batch of a few tokens than in a
    # larger one: with llama.cpp's own prefix reuse this decomposer prompt gave three different plans
    # in one process (cold, after another question's plan, and asked again).
    path = pulled_model("qwen2.5-coder-1.5b")
    question = _decompose("What year was the 2nd wife of the leader of the hussites born?")
    other = _decompose("Who is the mother of the director of the film Blue Harbour?")
    passages = "Passages:\n[1] Joanna of Rozmital: Joanna (c. 1430 - 1475) was the second wife of George of Podebrady."
    reading = _answer(passages, "When was Joanna of Rozmital born?")

    cold = LlamaModel(path, n_ctx=2048, prompt_cache_mb=256)
    expected = _output(cold, question, Decomposition)
    cold.close()

    warm = LlamaModel(path, n_ctx=2048, prompt_cache_mb=256)
    try:
        _output(warm, other, Decomposition)  # shares the instructions: a prefix is reused
        after_another = _output(warm, question, Decomposition)
        again = _output(warm, question, Decomposition)  # the whole prompt is in the cache
        _output(warm, reading, SubAnswer)  # another role's prompt in between
        after_a_role = _output(warm, question, Decomposition)
    finally:
        warm.close()
    assert expected[1], "the call reports token probabilities"
    assert after_another == expected
    assert again == expected
    assert after_a_role == expected


@pytest.mark.slow
def test_an_emptied_prompt_cache_starts_cold_and_answers_as_a_warm_one_and_a_fresh_model_do():
    # the benchmark empties the cache before each method's question (LlamaModel.forget_prompts): the call
    # must then evaluate the whole prompt, and give what the same prompt gives warm and in a new model
    path = pulled_model("smollm2-135m")
    schema = Decomposition.model_json_schema()
    question = _decompose("What year was the 2nd wife of the leader of the hussites born?")
    other = _decompose("Who is the mother of the director of the film Blue Harbour?")

    fresh = LlamaModel(path, n_ctx=2048)
    expected = fresh.chat_raw(question, json_schema=schema, max_tokens=40)
    fresh.close()

    # without warm role prefixes (tests/test_warm.py): an emptied cache is then an empty one
    model = LlamaModel(path, n_ctx=2048, prompt_cache_mb=64, warm_prefixes=False)
    try:
        cold = model.chat_raw(question, json_schema=schema, max_tokens=40)
        between = model.chat_raw(other, json_schema=schema, max_tokens=40)  # shares the instructions: a prefix is reused
        warm = model.chat_raw(question, json_schema=schema, max_tokens=40)  # in the RAM cache
        model.forget_prompts()
        emptied = model.chat_raw(question, json_schema=schema, max_tokens=40)
    finally:
        model.close()
    assert expected.cached_tokens == cold.cached_tokens == emptied.cached_tokens == 0
    assert warm.cached_tokens and warm.cached_tokens % 64 == 0 and warm.cached_tokens <= warm.prompt_tokens
    assert model.prompts.calls == model.prompts.counted == 4
    # every prompt token is either taken from the cache or evaluated
    calls = (cold, between, warm, emptied)
    assert model.prompts.cached + model.prompts.evaluated == sum(c.prompt_tokens for c in calls)
    assert model.prompts.cached == sum(c.cached_tokens or 0 for c in calls)
    outputs = {(c.raw, c.token_logprobs) for c in (expected, cold, warm, emptied)}
    assert len(outputs) == 1 and expected.token_logprobs
