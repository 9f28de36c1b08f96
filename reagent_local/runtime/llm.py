"""The one llama.cpp wrapper: lazy load, grammar-constrained JSON output, cost accounting.

Every structured call goes through ``LlamaModel.generate_json`` (or the same method of
``reagent_local.testing.ScriptedLLM`` in tests): it sends chat messages, constrains
decoding with a grammar made from a pydantic model's JSON schema, validates the output,
and returns the object together with an ``LLMCall`` record (rendered messages, raw
text, tokens, seconds) that callers log.
"""

from __future__ import annotations

import json
import math
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, Protocol, Sequence, TypeVar, runtime_checkable

from pydantic import BaseModel, ValidationError

from ..errors import ChatTemplateError, LLMOutputError, LLMTruncatedError, ModelIntegrityError, SchemaError
from .contention import Sharing
from .cores import CoreShare
from .prefill import DEFAULT_BLOCK, DEFAULT_WIDE, BlockSchedule, PromptReuse, aligned_llama_class
from .prompts import Message, is_fixed_text

T = TypeVar("T", bound=BaseModel)


@dataclass(frozen=True)
class LLMCall:
    """What was sent to a model and what came back, with its cost."""

    model_id: str
    messages: tuple[Message, ...]
    raw: str
    prompt_tokens: int
    completion_tokens: int
    seconds: float
    finish_reason: str
    schema_name: str = ""
    # (text, log-probability) of each generated token under the model's own distribution,
    # before the grammar narrowed it; empty when the backend does not report them
    token_logprobs: tuple[tuple[str, float], ...] = ()
    # prompt tokens taken from a cache instead of evaluated (the context's last prompt or the RAM prompt
    # cache); None when the backend does not say
    cached_tokens: int | None = None

    def span_probability(self, value: str) -> float | None:
        """How sure the model was of a string it wrote: the geometric mean probability of its tokens.

        ``value`` is located in the raw output as a JSON string (first occurrence); None when
        the call carries no token probabilities or the value cannot be found in them.
        """
        return span_probability(self.raw, self.token_logprobs, value)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (for the event log)."""
        return {
            "model": self.model_id,
            "messages": list(self.messages),
            "raw": self.raw,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "seconds": round(self.seconds, 4),
            "finish_reason": self.finish_reason,
            "schema": self.schema_name,
            "cached_tokens": self.cached_tokens,
        }


def span_probability(raw: str, tokens: Sequence[tuple[str, float]], value: str) -> float | None:
    """The geometric mean probability of the tokens that wrote ``value`` (as a JSON string) in ``raw``."""
    if not tokens or not value or "".join(text for text, _ in tokens) != raw[: sum(len(t) for t, _ in tokens)]:
        return None
    quoted = json.dumps(value, ensure_ascii=False)[1:-1]
    start = raw.find('"' + quoted + '"')
    if start < 0:
        return None
    start, end = start + 1, start + 1 + len(quoted)
    picked, offset = [], 0
    for text, logprob in tokens:
        if offset < end and offset + len(text) > start and text.strip('" '):
            picked.append(logprob)
        offset += len(text)
    return math.exp(sum(picked) / len(picked)) if picked else None


class _TokenRecorder:
    """A llama.cpp logits processor that records the log-probability of each token it then samples."""

    def __init__(self) -> None:
        self.previous: Any = None
        self.ids: list[int] = []
        self.logprobs: list[float] = []

    def __call__(self, input_ids: Any, logits: Any) -> Any:
        import numpy as np

        if self.previous is not None and len(input_ids):
            token = int(input_ids[-1])
            self.ids.append(token)
            self.logprobs.append(float(self.previous[token]))
        shifted = logits.astype(np.float64) - float(logits.max())
        self.previous = shifted - math.log(float(np.exp(shifted).sum()))
        return logits


@dataclass(frozen=True)
class JsonResult(Generic[T]):
    """A validated object and the call that produced it."""

    value: T
    call: LLMCall


@runtime_checkable
class LLM(Protocol):
    """The narrow interface every agent uses; ScriptedLLM implements it too."""

    model_id: str

    def generate_json(
        self,
        messages: Sequence[Message],
        schema: type[T],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        seed: int | None = None,
    ) -> JsonResult[T]:
        """Generate one JSON object that validates against ``schema``."""
        ...


def parse_json_output(raw: str, schema: type[T], finish_reason: str) -> T:
    """Validate raw model output; truncation and invalid JSON raise with the raw text."""
    if finish_reason == "length":
        raise LLMTruncatedError(
            f"output cut at the token limit before the {schema.__name__} object was complete",
            raw=raw,
            hint="raise max_tokens, or shorten the fields the schema allows",
        )
    try:
        # strict=False: llama-cpp-python's JSON grammar lets raw newlines into strings,
        # which strict JSON rejects although the object is complete and meant
        data = json.loads(raw, strict=False)
    except json.JSONDecodeError as exc:
        raise LLMOutputError(f"output is not JSON ({exc.msg} at {exc.pos})", raw=raw) from None
    try:
        return schema.model_validate(data)
    except ValidationError as exc:
        raise LLMOutputError(f"output does not validate as {schema.__name__}: {exc.errors()[:3]}", raw=raw) from None


# llama.cpp expands {0,N} repetitions into nested rules; past about 1,000 its grammar
# parser refuses and llama-cpp-python then crashes the process (measured: 1,000 works,
# 1,500 segfaults). Refuse such schemas up front with a message instead.
MAX_GRAMMAR_REPEAT = 1000


def check_grammar_limits(schema: Any, where: str = "schema") -> None:
    """Raise SchemaError when a JSON schema asks for repetitions llama.cpp cannot compile."""
    if isinstance(schema, dict):
        for key in ("maxLength", "maxItems"):
            value = schema.get(key)
            if isinstance(value, int) and value > MAX_GRAMMAR_REPEAT:
                raise SchemaError(
                    f"{where} has {key}={value}; llama.cpp grammars support at most {MAX_GRAMMAR_REPEAT}",
                    hint=f"lower {key} to {MAX_GRAMMAR_REPEAT} or less (short fields also keep small models on track)",
                )
        for name, sub in schema.items():
            check_grammar_limits(sub, f"{where}.{name}" if isinstance(sub, (dict, list)) else where)
    elif isinstance(schema, list):
        for item in schema:
            check_grammar_limits(item, where)


def physical_threads() -> int:
    """Threads for llama.cpp: the CPUs this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


@dataclass
class LlamaModel:
    """A GGUF model run in-process by llama.cpp; loaded on first use, one call at a time."""

    path: Path
    model_id: str = ""
    n_ctx: int = 4096
    n_threads: int | None = None
    n_gpu_layers: int = -1
    chat_format: str | None = None
    seed: int = 0
    temperature: float = 0.0
    max_tokens: int = 256
    # keep the KV states of recent prompts in RAM (MB; 0: off): when roles alternate, each
    # role's fixed instructions are found again instead of being prefilled afresh
    prompt_cache_mb: int = 0
    # prompts are evaluated in blocks of this many tokens aligned to position 0, so an answer does not
    # depend on which prompts ran before (reagent_local/runtime/prefill.py); 0: llama.cpp's own evaluation
    prefill_block: int = DEFAULT_BLOCK
    # from this position on, blocks of this many tokens (0: prefill_block everywhere; runtime/prefill.py)
    prefill_wide_block: int = DEFAULT_WIDE
    # llama.cpp's extra buffer types (weight repacking): auto | on | off; auto is off on AMX CPUs (reagent_local/runtime/cpu.py)
    extra_buffers: str = "auto"
    # where load-probe verdicts are remembered (reagent_local/runtime/load_probe.py); None: the default home's cache
    probe_cache: Path | None = None
    # keep each role's fixed instructions' KV state in that cache, and start every process and every emptied prompt
    # cache with them (reagent_local/runtime/warm.py); needs prompt_cache_mb and prefill_block above 0
    warm_prefixes: bool = True
    # how the last load was probed: which extra_buffers value it used and what the probe cost
    load_verdict: Any = field(default=None, init=False, repr=False)
    # what the calls saw of other model processes on this machine (reset by the benchmark per question)
    sharing: Sharing = field(default_factory=Sharing, init=False, repr=False)
    # prompt tokens the calls took from cache and evaluated (reset by the benchmark per question)
    prompts: PromptReuse = field(default_factory=PromptReuse, init=False, repr=False)
    # the warm role prefixes of the loaded model (runtime/warm.py: WarmPrefixes); None when off or not loaded
    warm: Any = field(default=None, init=False, repr=False)
    _llama: Any = field(default=None, init=False, repr=False)
    _cores: CoreShare | None = field(default=None, init=False, repr=False)
    _threads: int = field(default=0, init=False, repr=False)
    _others: int = field(default=0, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def __post_init__(self) -> None:
        self.path = Path(self.path)
        if not self.model_id:
            self.model_id = self.path.name

    # -- loading -----------------------------------------------------------------
    def _gpu_layers(self) -> int:
        import llama_cpp  # heavy import, deferred (after runtime/openmp.py set the wait policy)

        return self.n_gpu_layers if llama_cpp.llama_supports_gpu_offload() else 0

    def verdict(self) -> Any:
        """Which ``extra_buffers`` value loads this model safely here (load_probe.py), without loading it.

        A native crash would kill this process without a trace: the first load of this combination of
        file, build, CPU and settings is tried in a child process first (remembered afterwards).
        """
        if self.load_verdict is not None:
            return self.load_verdict
        if not self.path.is_file():
            raise ModelIntegrityError(f"model file {self.path} does not exist", hint="run `reagent models pull NAME` or pass --model PATH")
        from .models import check_before_load

        check_before_load(self.path)  # size against the registry, GGUF magic and version: cheap
        from .openmp import prefer_passive_wait

        prefer_passive_wait()  # before OpenMP starts: waiting threads sleep instead of spinning (runtime/openmp.py)
        from .load_probe import safe_extra_buffers

        self.load_verdict = safe_extra_buffers(self.path, self.extra_buffers, gpu_layers=self._gpu_layers(),
                                               threads=self.n_threads or physical_threads(),
                                               cache_dir=self._cache_dir())
        return self.load_verdict

    def prefill_schedule(self) -> BlockSchedule | None:
        """The blocks prompts are evaluated in (runtime/prefill.py); None: llama.cpp's own evaluation."""
        if self.prefill_block <= 0:
            return None
        return BlockSchedule(self.prefill_block, max(self.prefill_wide_block, 0))

    def _cache_dir(self) -> Path:
        from ..paths import default_home

        return self.probe_cache or default_home() / ".cache"

    def load(self) -> Any:
        """Load the model now (normally done lazily by the first call)."""
        if self._llama is not None:
            return self._llama
        self.verdict()
        import llama_cpp  # heavy import, deferred

        from .models import repair_hint
        from .native_load import construct_llama

        gpu_layers = self._gpu_layers()
        threads = self.n_threads or physical_threads()
        schedule = self.prefill_schedule()
        llama_class = aligned_llama_class(schedule) if schedule is not None else llama_cpp.Llama
        try:
            llama = construct_llama(
                llama_class,
                extra_buffers=self.load_verdict.extra_buffers,
                model_path=str(self.path),
                n_ctx=self.n_ctx,
                n_threads=threads,
                n_gpu_layers=gpu_layers,
                seed=self.seed,
                chat_format=self.chat_format,
                verbose=False,
            )
        except (ValueError, RuntimeError) as exc:  # llama.cpp's only report of a damaged file
            raise ModelIntegrityError(
                f"llama.cpp could not load {self.path} ({exc}): the file is truncated or damaged",
                hint=repair_hint(self.path),
            ) from None
        # llama-cpp-python silently falls back to the llama-2 format when the GGUF
        # has no chat template; refuse instead, unless a format was given.
        if self.chat_format is None and not llama.metadata.get("tokenizer.chat_template"):
            llama.close()
            raise ChatTemplateError(
                f"{self.path.name} has no chat template in its GGUF metadata",
                hint="pass a chat format explicitly (config llm.chat_format, e.g. 'chatml')",
            )
        if self.prompt_cache_mb > 0:
            llama.set_cache(_prompt_cache(self.prompt_cache_mb << 20))
            if self.warm_prefixes and schedule is not None:  # bit-identical reuse rests on aligned prefill
                from .warm import open_warm_prefixes

                self.warm = open_warm_prefixes(llama, self.path, self._cache_dir(), threads=threads,
                                               block=schedule, gpu_layers=gpu_layers,
                                               extra_buffers=self.load_verdict.extra_buffers)
                llama.snapshots = self.warm
        self._cores = CoreShare(model=self.model_id, fixed_threads=self.n_threads)
        self._cores.register()
        self._llama, self._threads = llama, threads
        return llama

    def forget_prompts(self) -> None:
        """Make the next call start as in a fresh process: the RAM prompt cache holds the warm role prefixes only.

        The benchmark does this before each method's question, so that a method's seconds never use the
        prompt states another method left (within one method's question the cache works as in use); every
        method starts with the same warm prefixes (runtime/warm.py), as a fresh process would.
        """
        with self._lock:
            if self._llama is None:
                return
            if self._llama.cache is not None:
                self._llama.set_cache(_prompt_cache(self.prompt_cache_mb << 20))
                if self.warm is not None:
                    self.warm.install(self._llama.cache, self._llama)
            self._llama.reset()  # no prefix of the last prompt is matched again; its KV cells are overwritten

    def close(self) -> None:
        """Free the model's memory and leave the machine's registry of model processes."""
        with self._lock:
            if self._llama is not None:
                self._llama.close()
                self._llama = None
            if self._cores is not None:
                self._cores.unregister()
                self._cores = None
            self.warm = None

    def _take_share(self, llama: Any) -> int:
        """Mark this process busy and run the next call with its fair share of the cores (runtime/cores.py)."""
        if self._cores is None:
            return self._threads
        share = self._cores.begin()
        if share.threads != self._threads:
            import llama_cpp

            llama_cpp.llama_set_n_threads(llama.ctx, share.threads, share.threads)
            self._threads = share.threads
        self._others = share.others
        return share.threads

    # -- generation --------------------------------------------------------------
    def chat_raw(
        self,
        messages: Sequence[Message],
        *,
        json_schema: dict[str, Any] | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
        seed: int | None = None,
    ) -> LLMCall:
        """One chat completion; grammar-constrained when ``json_schema`` is given."""
        with self._lock:  # one llama.cpp context is not thread-safe
            llama = self.load()
            kwargs: dict[str, Any] = {
                "messages": list(messages),
                "max_tokens": max_tokens or self.max_tokens,
                "temperature": self.temperature if temperature is None else temperature,
                "seed": self.seed if seed is None else seed,
            }
            if json_schema is not None:
                # This form applies a grammar; {"type": "json_schema", ...} silently does not.
                kwargs["response_format"] = {"type": "json_object", "schema": json_schema}
            recorder = _TokenRecorder()
            kwargs["logits_processor"] = [recorder]
            threads = self._take_share(llama)
            if self.warm is not None:  # a prompt file's instructions: their state is taken on the way if not known yet
                system = messages[0].get("content") if messages and messages[0].get("role") == "system" else None
                self.warm.expect(system if system and is_fixed_text(system) else None)
            start = time.perf_counter()
            try:
                response = llama.create_chat_completion(**kwargs)
            finally:
                if self._cores is not None:
                    self._cores.end()
            seconds = time.perf_counter() - start
            if self.warm is not None:
                self.warm.flush()  # a role's first state, written outside the call's seconds
            self.sharing.add(threads=threads, others=self._others, seconds=seconds)
            cached, evaluated = getattr(llama, "last_reused", None), getattr(llama, "last_evaluated", None)
            self.prompts.add(cached, evaluated)
            # the last token is sampled after the last callback: its probability is not known
            pieces = [llama.detokenize([token]).decode("utf-8", errors="replace") for token in recorder.ids]
        choice = response["choices"][0]
        usage = response.get("usage") or {}
        return LLMCall(
            model_id=self.model_id,
            messages=tuple(dict(m) for m in messages),
            raw=choice["message"].get("content") or "",
            prompt_tokens=int(usage.get("prompt_tokens", 0)),
            completion_tokens=int(usage.get("completion_tokens", 0)),
            seconds=seconds,
            finish_reason=choice.get("finish_reason") or "stop",
            token_logprobs=tuple(zip(pieces, recorder.logprobs)),
            cached_tokens=cached,
        )

    def generate_json(
        self,
        messages: Sequence[Message],
        schema: type[T],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        seed: int | None = None,
    ) -> JsonResult[T]:
        """Generate one JSON object constrained by and validated against ``schema``."""
        json_schema = schema.model_json_schema()
        check_grammar_limits(json_schema, schema.__name__)
        call = self.chat_raw(
            messages,
            json_schema=json_schema,
            max_tokens=max_tokens,
            temperature=temperature,
            seed=seed,
        )
        call = LLMCall(**{**call.__dict__, "schema_name": schema.__name__})
        value = parse_json_output(call.raw, schema, call.finish_reason)
        return JsonResult(value=value, call=call)


def _prompt_cache(capacity_bytes: int) -> Any:
    """llama.cpp's RAM cache of prompt states, keeping only the last row of logits with each state.

    llama-cpp-python copies every prompt row of logits into a saved state (hundreds of MB for a
    large vocabulary) although it never reads them back: the last prompt token is evaluated
    again after a state is loaded. Dropping them keeps the cache's memory to its KV states.
    """
    import llama_cpp

    class PromptCache(llama_cpp.LlamaRAMCache):
        def __setitem__(self, key: Any, value: Any) -> None:
            value.scores = value.scores[-1:].copy()
            super().__setitem__(key, value)

    return PromptCache(capacity_bytes=capacity_bytes)
