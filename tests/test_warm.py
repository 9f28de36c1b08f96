"""Warm role prefixes: each role's fixed instructions' KV state, kept on disk, put back into every emptied prompt cache."""

from __future__ import annotations

import json
import os
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from conftest import pulled_model
from reagent_local.agents import PROMPTS
from reagent_local.agents.schemas import Decomposition, SubAnswer
from reagent_local import paths as paths_module
from reagent_local.runtime import warm as warm_module
from reagent_local.runtime.cpu import CpuInfo
from reagent_local.runtime.llm import LlamaModel
from reagent_local.runtime.prompts import render_messages
from reagent_local.runtime.warm import WarmPrefixes, WarmState, fixed_prefix_length, identity_of, warm_key

BLOCK = 64


def _identity(**changes) -> dict:
    base = {"version": 1, "model": "/m/model.gguf", "size": 10, "mtime_ns": 1, "llama_cpp": "0.3.36",
            "system_info": "AVX2 = 1", "cpu": "some cpu", "flags": ["avx2"], "threads": 2, "prefill_block": BLOCK,
            "extra_buffers": True, "gpu_layers": 0, "context": {"n_ctx": 4096, "n_batch": 512, "type_k": 1}}
    return {**base, **changes}


def _state(n: int = 128, fill: int = 7) -> WarmState:
    return WarmState(tokens=tuple(range(1, n + 1)), state=bytes([fill]) * 1000 + os.urandom(24), seed=3)


def _store(tmp_path: Path, **changes) -> WarmPrefixes:
    return WarmPrefixes(tmp_path, _identity(**changes), block=BLOCK)


# -- the key -------------------------------------------------------------------------------------------------------
def test_the_key_changes_with_everything_that_changes_the_numbers():
    base = warm_key(_identity())
    assert warm_key(_identity()) == base
    changed = [dict(size=11), dict(mtime_ns=2), dict(model="/m/other.gguf"), dict(llama_cpp="0.3.37"),
               dict(system_info="AVX512 = 1"), dict(cpu="another"), dict(flags=["avx2", "amx_int8"]), dict(threads=1),
               dict(prefill_block=128), dict(extra_buffers=False), dict(gpu_layers=-1),
               dict(context={"n_ctx": 2048, "n_batch": 512, "type_k": 1}),
               dict(context={"n_ctx": 4096, "n_batch": 512, "type_k": 8})]
    keys = {warm_key(_identity(**change)) for change in changed}
    assert base not in keys and len(keys) == len(changed)


def test_the_identity_is_read_from_the_file_the_build_the_cpu_and_the_context(tmp_path, monkeypatch):
    model = tmp_path / "model.gguf"
    model.write_bytes(b"GGUF" + bytes(12))
    monkeypatch.setattr("reagent_local.runtime.load_probe.llama_build", lambda: ("0.3.36", "AVX2 = 1"))
    monkeypatch.setattr("reagent_local.runtime.cpu.read_cpu", lambda: CpuInfo("cpu x", frozenset({"avx2"}), 2))
    llama = SimpleNamespace(context_params=SimpleNamespace(n_ctx=4096, n_batch=512, n_ubatch=512, type_k=1, type_v=1))
    first = identity_of(llama, model, threads=2, block=64, extra_buffers=True, gpu_layers=0)
    assert first["size"] == 16 and first["context"] == {"n_ctx": 4096, "n_batch": 512, "n_ubatch": 512,
                                                        "type_k": 1, "type_v": 1}
    assert first["cpu"] == "cpu x" and first["threads"] == 2 and first["prefill_block"] == "64"
    model.write_bytes(b"GGUF" + bytes(20))  # the file was replaced: its states are of another model
    assert warm_key(identity_of(llama, model, threads=2, block=64, extra_buffers=True, gpu_layers=0)) != warm_key(first)


# -- the files -------------------------------------------------------------------------------------------------------
def test_a_state_written_is_read_back_whole_and_only_under_its_key(tmp_path):
    store, state = _store(tmp_path), _state()
    assert store.write(state)
    files = sorted(p.name for p in store.folder.iterdir())
    assert files == [f"{state.name}.json", f"{state.name}.state"]  # no temporary file left
    assert (store.folder / f"{state.name}.state").read_bytes() == state.state  # raw bytes, no pickle
    meta = json.loads((store.folder / f"{state.name}.json").read_text())
    assert meta["tokens"] == list(state.tokens) and meta["bytes"] == len(state.state) and meta["key"] == store.key
    assert _store(tmp_path).read() == [state]
    assert _store(tmp_path, threads=1).read() == []  # another thread count: another folder


def test_a_write_that_fails_half_way_leaves_the_old_files_and_no_temporary_one(tmp_path, monkeypatch):
    store, state = _store(tmp_path), _state()
    assert store.write(state)
    other = WarmState(tokens=state.tokens, state=b"x" * 5000, seed=0)

    def crash(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(paths_module.os, "replace", crash)  # the store writes through paths.write_bytes_atomic
    assert store.write(other) is False
    assert sorted(p.name for p in store.folder.iterdir()) == [f"{state.name}.json", f"{state.name}.state"]
    monkeypatch.undo()
    assert _store(tmp_path).read() == [state]


@pytest.mark.parametrize("damage", ["truncated", "flipped", "no-state", "no-json", "garbage-json", "other-key",
                                    "not-a-block", "renamed", "other-version"])
def test_a_damaged_missing_or_foreign_file_is_ignored(tmp_path, damage):
    store, state = _store(tmp_path), _state()
    good = _state(192, fill=9)
    store.write(state)
    store.write(good)
    meta_path, raw_path = store.folder / f"{state.name}.json", store.folder / f"{state.name}.state"
    meta = json.loads(meta_path.read_text())
    if damage == "truncated":
        raw_path.write_bytes(state.state[:-10])
    elif damage == "flipped":
        raw_path.write_bytes(state.state[:100] + bytes([state.state[100] ^ 1]) + state.state[101:])
    elif damage == "no-state":
        raw_path.unlink()
    elif damage == "no-json":
        meta_path.unlink()
    elif damage == "garbage-json":
        meta_path.write_text("{not json")
    elif damage == "other-key":
        meta_path.write_text(json.dumps({**meta, "key": "0" * 24}))
    elif damage == "not-a-block":
        meta_path.write_text(json.dumps({**meta, "tokens": meta["tokens"][:100]}))
    elif damage == "renamed":
        meta_path.rename(store.folder / "0123456789abcdef0123.json")
    elif damage == "other-version":
        meta_path.write_text(json.dumps({**meta, "version": 99}))
    assert _store(tmp_path).read() == [good]


def test_no_folder_and_an_unwritable_folder_only_cost_the_warm_start(tmp_path):
    assert WarmPrefixes(None, _identity(), block=BLOCK).read() == []
    assert WarmPrefixes(None, _identity(), block=BLOCK).write(_state()) is False
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")  # the cache folder cannot be made (root ignores permissions; this it cannot)
    store = WarmPrefixes(blocked, _identity(), block=BLOCK)
    assert store.write(_state()) is False and store.read() == []


def test_only_the_newest_states_are_kept_and_read(tmp_path):
    store = WarmPrefixes(tmp_path, _identity(), block=BLOCK, max_states=2)
    states = [_state(64 * (i + 1)) for i in range(3)]
    for i, state in enumerate(states):
        store.write(state)
        os.utime(store.folder / f"{state.name}.json", (1000 + i, 1000 + i))
    assert store.read() == [states[2], states[1]]
    assert sorted(p.stem for p in store.folder.iterdir()) == sorted(2 * [states[1].name, states[2].name])


# -- the fixed prefix ---------------------------------------------------------------------------------------------------
def test_the_fixed_prefix_ends_with_the_last_token_inside_the_system_text():
    pieces = [b"<s>", b"sys", b"tem\n", b"You ", b"split", b" it.", b"<e>", b"\nQ"]
    assert fixed_prefix_length(pieces, b"You split it.") == 6
    assert fixed_prefix_length(pieces, b"You split") == 5
    assert fixed_prefix_length(pieces, b"You spl") == 4  # a token that runs past the end is not fixed
    assert fixed_prefix_length(pieces, b"absent") == 0
    assert fixed_prefix_length(pieces, b"") == 0


class FakeLlama:
    """What WarmPrefixes reads of a llama_cpp.Llama: tokens as one-byte pieces, a context state, a prompt cache."""

    def __init__(self, n_ctx: int = 1024) -> None:
        self.input_ids = np.zeros(n_ctx, dtype=np.intc)
        self.n_tokens = 0
        self.cache = None
        self.resets = 0

    def detokenize(self, tokens, special=False) -> bytes:
        return bytes(tokens)

    def n_vocab(self) -> int:
        return 32

    def set_cache(self, cache) -> None:
        self.cache = cache

    def reset(self) -> None:
        self.resets += 1
        self.n_tokens = 0


def _prompt(system: bytes, user: bytes) -> list[int]:
    return list(b"<|sys|>" + system + b"<|end|><|user|>" + user)


def test_the_boundary_is_the_last_block_inside_the_system_message_and_only_once(tmp_path):
    store, llama = _store(tmp_path), FakeLlama()
    system = "Rules: " + "answer with one span. " * 9  # 205 characters, one token each here
    prompt = _prompt(system.encode(), b"Question: who?")
    store.expect(system)
    assert store.boundary(llama, prompt) == (7 + len(system)) // BLOCK * BLOCK == 192
    store.states[tuple(prompt[:192])] = _state()  # known: not taken again
    assert store.boundary(llama, prompt) == 0
    store.expect("Short rules.")  # less than a block: nothing to keep
    assert store.boundary(llama, _prompt(b"Short rules.", b"Q")) == 0
    store.expect(None)  # no system message
    assert store.boundary(llama, prompt) == 0


def test_only_a_prompt_files_instructions_are_kept(tmp_path):
    # a system message that varies from call to call (a user's method, a served client) would fill the cache
    class Recording(FakeLlama):
        def create_chat_completion(self, **kwargs):
            self.system = store._system
            return {"choices": [{"message": {"content": "{}"}, "finish_reason": "stop"}], "usage": {}}

    model = LlamaModel(tmp_path / "m.gguf", probe_cache=tmp_path)
    store, llama = _store(tmp_path), Recording()
    model._llama, model.warm = llama, store
    decompose = _decompose("Who?")
    model.chat_raw(decompose)
    assert llama.system == decompose[0]["content"]
    rag = render_messages("reagent_local.bench", "rag", question="Who?", passages="[1] x")  # a baseline method's
    model.chat_raw(rag)
    assert llama.system == rag[0]["content"]
    model.chat_raw([{"role": "system", "content": "Today is Monday. " * 20}, {"role": "user", "content": "Who?"}])
    assert llama.system is None
    model.chat_raw([{"role": "user", "content": "Who?"}])
    assert llama.system is None


def test_a_served_model_knows_the_project_prompt_files_it_did_not_render(monkeypatch):
    from reagent_local.runtime import prompts

    ircot = (prompts.PROMPT_FOLDERS[1] / "ircot.txt").read_text(encoding="utf-8").split("---user---")[0].strip()
    monkeypatch.setattr(prompts, "_FIXED", set())  # nothing rendered in this process
    prompts._read_project_prompts.cache_clear()
    try:
        assert prompts.is_fixed_text(ircot) and not prompts.is_fixed_text(ircot + " Today is Monday.")
    finally:
        prompts._read_project_prompts.cache_clear()


def test_states_on_disk_are_checked_against_the_context_and_put_into_the_prompt_cache(tmp_path, monkeypatch):
    from reagent_local.runtime.llm import _prompt_cache

    good, refused = _state(128), _state(64, fill=1)
    monkeypatch.setattr(warm_module, "state_fits", lambda llama, state: state.tokens != refused.tokens)
    writer = _store(tmp_path)
    writer.write(good)
    writer.write(refused)
    llama = FakeLlama()
    llama.set_cache(_prompt_cache(64 << 20))
    store = _store(tmp_path)
    assert store.load(llama) == 1 and list(store.states) == [good.tokens]
    assert llama.resets == 1 and llama.n_tokens == 0  # the trial leaves nothing to reuse
    cached = llama.cache[list(good.tokens) + [99, 98]]  # the longest cached prefix of a prompt
    assert cached.n_tokens == 128 and cached.reagent_stable == 128 and cached.llama_state == good.state
    assert list(cached.input_ids[:128]) == list(good.tokens) and len(cached.input_ids) == 1024


def test_forget_prompts_empties_the_cache_and_puts_the_warm_prefixes_back(tmp_path):
    from reagent_local.runtime.llm import _prompt_cache

    model = LlamaModel(tmp_path / "m.gguf", prompt_cache_mb=64, probe_cache=tmp_path)
    llama = FakeLlama()
    llama.set_cache(_prompt_cache(64 << 20))
    store = _store(tmp_path)
    warm = _state(128)
    store.states[warm.tokens] = warm
    store.install(llama.cache, llama)
    other = _state(256, fill=3)  # another method's prompt, left in the cache
    llama.cache[other.tokens] = warm_module.llama_state(other, llama)
    model._llama, model.warm = llama, store
    model.forget_prompts()
    assert list(llama.cache.cache_state) == [warm.tokens]
    assert llama.resets == 1
    model.warm = None  # off: the cache is emptied
    model.forget_prompts()
    assert list(llama.cache.cache_state) == []


# -- a real model ---------------------------------------------------------------------------------------------------------
def _decompose(question: str) -> list[dict[str, str]]:
    return render_messages(PROMPTS, "decompose", question=question)


def _answer(passages: str, question: str) -> list[dict[str, str]]:
    return render_messages(PROMPTS, "answer", evidence=passages, question=question)


PASSAGES = ("Passages:\n[1] Joanna of Rozmital: Joanna of Rozmital (c. 1430 - 1475) was the second wife of George of "
            "Podebrady, King of Bohemia, the leader of the moderate Hussites.")


@pytest.mark.slow
def test_a_fresh_process_finds_a_roles_instructions_and_an_emptied_cache_gets_them_back(tmp_path):
    path = pulled_model("smollm2-135m")
    schema = Decomposition.model_json_schema()
    question = _decompose("What year was the 2nd wife of the leader of the hussites born?")
    other = _decompose("Who is the mother of the director of the film Blue Harbour?")

    first = LlamaModel(path, n_ctx=2048, prompt_cache_mb=64, probe_cache=tmp_path)
    try:
        cold = first.chat_raw(question, json_schema=schema, max_tokens=30)  # takes the state on the way
        files = sorted(p.suffix for p in (tmp_path / "warm-prefixes").rglob("*") if p.is_file())
        first.forget_prompts()
        again = first.chat_raw(other, json_schema=schema, max_tokens=30)
        reuse, identity = first.prompts, first.warm.identity
    finally:
        first.close()
    # bytes that check out on disk (JSON, length, sha256) but that llama.cpp refuses: left out at load, not an error
    WarmPrefixes(tmp_path, identity, block=64).write(WarmState(tuple(range(1, 65)), os.urandom(50_000)))
    assert cold.cached_tokens == 0 and files == [".json", ".state"]
    assert again.cached_tokens == 512  # the decomposer's ~520 fixed tokens, down to a block boundary
    assert reuse.cached == 512 and reuse.cached + reuse.evaluated == cold.prompt_tokens + again.prompt_tokens

    fresh = LlamaModel(path, n_ctx=2048, prompt_cache_mb=64, probe_cache=tmp_path)
    try:
        fresh.load()
        assert fresh.warm.read_count == 1
        warm = fresh.chat_raw(question, json_schema=schema, max_tokens=30)
    finally:
        fresh.close()
    assert warm.cached_tokens == 512 and (warm.raw, warm.token_logprobs) == (cold.raw, cold.token_logprobs)

    off = LlamaModel(path, n_ctx=2048, prompt_cache_mb=64, probe_cache=tmp_path, warm_prefixes=False)
    try:
        assert off.chat_raw(question, json_schema=schema, max_tokens=30).cached_tokens == 0 and off.warm is None
    finally:
        off.close()


@pytest.mark.slow
def test_an_unwritable_cache_folder_keeps_the_prefixes_for_the_process(tmp_path):
    path = pulled_model("smollm2-135m")
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    model = LlamaModel(path, n_ctx=2048, prompt_cache_mb=64, probe_cache=blocked)
    schema = Decomposition.model_json_schema()
    question = _decompose("Who is the mother of the director of the film Blue Harbour?")
    try:
        assert model.chat_raw(question, json_schema=schema, max_tokens=10).cached_tokens == 0
        model.forget_prompts()
        assert model.chat_raw(question, json_schema=schema, max_tokens=10).cached_tokens == 512
    finally:
        model.close()


@pytest.mark.slow
def test_a_warm_prefix_gives_the_tokens_and_probabilities_of_a_cold_prefill(tmp_path):
    # the answers-never-change promise, on the answering model: each role prompt cold (warm prefixes off), then
    # with the state its first call took, then in a model that read the states from disk
    path = pulled_model("qwen2.5-coder-1.5b")
    prompts = [(_decompose("What year was the 2nd wife of the leader of the hussites born?"), Decomposition, 512),
               (_answer(PASSAGES, "Who was the second wife of George of Podebrady?"), SubAnswer, 192)]

    def run(model: LlamaModel) -> list:
        outputs = []
        for messages, schema, _ in prompts:
            model.forget_prompts()
            call = model.chat_raw(messages, json_schema=schema.model_json_schema(), max_tokens=24)
            outputs.append((call.raw, call.token_logprobs, call.cached_tokens))
        return outputs

    cold_model = LlamaModel(path, n_ctx=4096, prompt_cache_mb=256, probe_cache=tmp_path, warm_prefixes=False)
    try:
        cold = run(cold_model)
    finally:
        cold_model.close()
    first_model = LlamaModel(path, n_ctx=4096, prompt_cache_mb=256, probe_cache=tmp_path)
    try:
        taking = run(first_model)  # each role's first call: cold, takes its state
        warm = run(first_model)  # the emptied cache got them back
    finally:
        first_model.close()
    fresh_model = LlamaModel(path, n_ctx=4096, prompt_cache_mb=256, probe_cache=tmp_path)
    try:
        fresh = run(fresh_model)  # read from disk
        read = fresh_model.warm.read_count
    finally:
        fresh_model.close()
    assert read == 2
    expected = [(raw, logprobs) for raw, logprobs, _ in cold]
    assert all(logprobs for _, logprobs in expected)
    for outputs in (taking, warm, fresh):
        assert [(raw, logprobs) for raw, logprobs, _ in outputs] == expected
    assert [c for *_, c in cold] == [c for *_, c in taking] == [0, 0]
    assert [c for *_, c in warm] == [c for *_, c in fresh] == [boundary for *_, boundary in prompts]
