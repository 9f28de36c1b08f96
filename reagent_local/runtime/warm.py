"""Warm role prefixes: the KV state of each role's fixed instructions, kept on disk so that no process starts cold.

A model call's prompt begins with its role's fixed instructions (the chat template's system message,
reagent_local/agents/prompts/*.txt). Within one process the RAM prompt cache finds them again, but a
fresh process (ask, serve, bench) and every benchmark question (``LlamaModel.forget_prompts``) used to
prefill them afresh: about 7 s for the decomposer's 500 tokens on two cores.

The state is taken while a role's first call evaluates its instructions: aligned prefill passes the
last block boundary inside the system message anyway (runtime/prefill.py), so taking it there costs a
copy and no evaluation. It holds full aligned blocks only (``reagent_stable`` is its length), so a call
that starts from it computes exactly what a cold call computes. It is written to the home's cache as
raw bytes beside a small JSON (no pickle), in a folder keyed by everything that changes the numbers:
model file, llama.cpp build, CPU, threads, context parameters, extra buffers, prefill block. At load,
and after ``forget_prompts``, the states go into the RAM prompt cache, where a role's first call finds
its instructions.

A missing, truncated, damaged or foreign file is ignored (the next call that evaluates that prefix
takes it again); a cache folder that cannot be written only costs the warm start of the next process.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from ..paths import write_bytes_atomic
from .prefill import BlockSchedule, as_schedule

WARM_VERSION = 1
FOLDER = "warm-prefixes"
MAX_STATES = 16  # states kept per key, newest first: the project has 11 prompt files; edited prompts leave old ones
# the context parameters that decide what a prefix's KV state holds or how its numbers are computed
_CONTEXT_FIELDS = ("n_ctx", "n_batch", "n_ubatch", "n_seq_max", "type_k", "type_v", "flash_attn_type", "attention_type",
                   "rope_scaling_type", "rope_freq_base", "rope_freq_scale", "yarn_ext_factor", "offload_kqv",
                   "op_offload", "swa_full", "kv_unified")


def identity_of(llama: Any, model: Path, *, threads: int, block: "int | BlockSchedule", extra_buffers: bool | None,
                gpu_layers: int) -> dict[str, Any]:
    """Everything a prefix's state depends on besides its tokens: file, build, CPU, threads, context, settings.

    ``threads`` is the configured count; a call may run with a share of it (runtime/cores.py), and a state is
    taken whatever the share: llama.cpp's CPU kernels gave bit-identical logits at 1 and 2 threads for both
    registry models measured here, which the RAM prompt cache already relies on within a process.
    """
    from .cpu import read_cpu
    from .load_probe import llama_build

    stat = Path(model).stat()
    version, system_info = llama_build()
    cpu = read_cpu()
    params = getattr(llama, "context_params", None)
    context = {name: getattr(params, name) for name in _CONTEXT_FIELDS if hasattr(params, name)}
    return {"version": WARM_VERSION, "model": str(Path(model).resolve()), "size": stat.st_size,
            "mtime_ns": stat.st_mtime_ns, "llama_cpp": version, "system_info": system_info, "libraries": _libraries(),
            "cpu": cpu.model,
            "flags": sorted(cpu.flags), "threads": threads, "prefill_block": as_schedule(block).label(),
            "extra_buffers": extra_buffers, "gpu_layers": gpu_layers, "context": context}


def _libraries() -> list[list[Any]]:
    """llama.cpp's shared libraries (name, size, mtime): a rebuild of the same version changes them."""
    import llama_cpp.llama_cpp as native

    try:
        folder = Path(native._lib._name).parent
        return sorted([p.name, p.stat().st_size, p.stat().st_mtime_ns] for p in folder.iterdir()
                      if p.suffix in (".so", ".dylib", ".dll") or ".so." in p.name)
    except (AttributeError, OSError, TypeError):
        return []


def warm_key(identity: dict[str, Any]) -> str:
    """The folder name of one identity's states."""
    return hashlib.sha256(json.dumps(identity, sort_keys=True, default=str).encode()).hexdigest()[:24]


def fixed_prefix_length(pieces: Sequence[bytes], fixed: bytes) -> int:
    """How many leading tokens (their texts ``pieces``) end at or before the end of the first ``fixed`` in them (0: absent)."""
    at = b"".join(pieces).find(fixed) if fixed else -1
    if at < 0:
        return 0
    end, offset, count = at + len(fixed), 0, 0
    for piece in pieces:
        offset += len(piece)
        if offset > end:
            break
        count += 1
    return count


@dataclass(frozen=True)
class WarmState:
    """The context state after evaluating ``tokens`` (a whole number of aligned blocks) from position 0."""

    tokens: tuple[int, ...]
    state: bytes  # llama.cpp's llama_state_get_data: the KV cells of ``tokens`` (and the last block's logits)
    seed: int = 0

    @property
    def name(self) -> str:
        return hashlib.sha256(",".join(map(str, self.tokens)).encode()).hexdigest()[:20]


def capture_state(llama: Any) -> WarmState:
    """The state of ``llama``'s context as it is: its evaluated tokens and their KV cells.

    ``Llama.save_state`` would also copy a row of logits per evaluated token (hundreds of MB for a large
    vocabulary) that is never read back: only llama.cpp's own state bytes are taken.
    """
    import ctypes

    import llama_cpp

    size = llama_cpp.llama_state_get_size(llama.ctx)
    buffer = (ctypes.c_uint8 * int(size))()
    written = int(llama_cpp.llama_state_get_data(llama.ctx, buffer, size))
    if written > int(size):
        raise RuntimeError("llama.cpp wrote more state than it said")
    tokens = tuple(int(t) for t in llama.input_ids[: llama.n_tokens])
    return WarmState(tokens=tokens, state=ctypes.string_at(buffer, written), seed=int(getattr(llama, "_seed", 0)))


def llama_state(warm: WarmState, llama: Any) -> Any:
    """``warm`` as the ``llama_cpp.LlamaState`` that ``llama.load_state`` (and the RAM prompt cache) take."""
    import llama_cpp
    import numpy as np

    ids = np.zeros_like(llama.input_ids)  # load_state puts this array in place of the context's own
    ids[: len(warm.tokens)] = warm.tokens
    # never read: after a load the prompt's next token is always evaluated, which writes fresh logits
    scores = np.zeros((1, llama.n_vocab()), dtype=np.single)
    state = llama_cpp.LlamaState(input_ids=ids, scores=scores, n_tokens=len(warm.tokens), llama_state=warm.state,
                                 llama_state_size=len(warm.state), seed=warm.seed)
    state.reagent_stable = len(warm.tokens)  # every block evaluated aligned: all of it reusable (runtime/prefill.py)
    return state


def state_fits(llama: Any, warm: WarmState) -> bool:
    """Whether ``llama``'s context takes ``warm``'s bytes (it refuses a state of another model or context size).

    The bytes are set directly: ``Llama.load_state`` would also rewrite its rows of logits (about 0.1 s).
    The caller resets the context afterwards, so nothing of the trial is reused.
    """
    import ctypes

    import llama_cpp

    buffer = (ctypes.c_uint8 * len(warm.state)).from_buffer_copy(warm.state)
    return int(llama_cpp.llama_state_set_data(llama.ctx, buffer, len(warm.state))) == len(warm.state)


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


class WarmPrefixes:
    """The warm role prefixes of one loaded model: read from disk, taken by calls, put into the prompt cache.

    It is also the model's ``AlignedLlama.snapshots``: before each call ``expect`` says the call's fixed
    text (its system message); ``boundary`` finds the last block boundary inside it in the prompt's tokens,
    and ``capture`` keeps the state there when no state of that prefix is known yet.
    """

    def __init__(self, cache_dir: Path | None, identity: dict[str, Any], *, block: "int | BlockSchedule",
                 max_states: int = MAX_STATES) -> None:
        self.identity = identity
        self.key = warm_key(identity)
        self.folder = Path(cache_dir) / FOLDER / self.key if cache_dir is not None else None
        self.schedule = as_schedule(block)
        self.max_states = max_states
        self.states: dict[tuple[int, ...], WarmState] = {}
        self.read_count = 0  # states read from disk at load
        self.load_seconds = 0.0  # reading, checking and installing them
        self._fixed: dict[str, tuple[int, ...]] = {}  # a system text -> its prompt tokens up to its last block boundary
        self._system: str | None = None
        self._pending: list[WarmState] = []

    # -- disk ---------------------------------------------------------------------
    def read(self) -> list[WarmState]:
        """The states on disk for this key, newest first; files that do not check out are left out."""
        if self.folder is None:
            return []
        try:
            metas = sorted(self.folder.glob("*.json"), key=_mtime, reverse=True)
        except OSError:
            return []
        found: list[WarmState] = []
        for meta in metas:
            if len(found) >= self.max_states:
                break
            state = self._read_one(meta)
            if state is not None:
                found.append(state)
        return found

    def _read_one(self, meta: Path) -> WarmState | None:
        try:
            data = json.loads(meta.read_text(encoding="utf-8"))
            if data.get("version") != WARM_VERSION or data.get("key") != self.key:
                return None
            tokens = tuple(int(t) for t in data["tokens"])
            if not tokens or not self.schedule.is_boundary(len(tokens)):
                return None
            raw = meta.with_suffix(".state").read_bytes()
            if len(raw) != int(data["bytes"]) or hashlib.sha256(raw).hexdigest() != data["sha256"]:
                return None  # truncated or damaged: a wrong number in a KV cell would change answers
            state = WarmState(tokens=tokens, state=raw, seed=int(data.get("seed", 0)))
            return state if state.name == meta.stem else None
        except (OSError, ValueError, TypeError, KeyError, AttributeError):
            return None

    def write(self, state: WarmState) -> bool:
        """Keep ``state`` on disk (the bytes, then the JSON that vouches for them); False when the folder refuses."""
        if self.folder is None:
            return False
        meta = {"version": WARM_VERSION, "key": self.key, "tokens": list(state.tokens), "bytes": len(state.state),
                "sha256": hashlib.sha256(state.state).hexdigest(), "seed": state.seed, "written_at": time.time(),
                "identity": self.identity}
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            write_bytes_atomic(self.folder / f"{state.name}.state", state.state)
            write_bytes_atomic(self.folder / f"{state.name}.json", json.dumps(meta).encode("utf-8"))
        except OSError:
            return False
        self._prune()
        return True

    def _prune(self) -> None:
        """Keep the newest ``max_states`` states of this key on disk: edited prompts leave old ones behind.

        A state still in use that goes is taken again by its role's next first call, and is then the newest.
        """
        try:
            metas = sorted(self.folder.glob("*.json"), key=_mtime, reverse=True)  # type: ignore[union-attr]
            for meta in metas[self.max_states:]:
                meta.unlink(missing_ok=True)
                meta.with_suffix(".state").unlink(missing_ok=True)
        except OSError:
            pass

    # -- the model ------------------------------------------------------------------
    def load(self, llama: Any) -> int:
        """Read the states on disk, keep those ``llama``'s context accepts, and put them into its prompt cache."""
        start = time.perf_counter()
        found = self.read()
        for state in found:
            # a state this context refuses would fail in the middle of a call: not kept
            if len(state.tokens) < len(llama.input_ids) and state_fits(llama, state):
                self.states.setdefault(state.tokens, state)
        if found:
            llama.reset()  # nothing of the trial is reused as a prefix
        self.read_count = len(self.states)
        if getattr(llama, "cache", None) is not None:
            self.install(llama.cache, llama)
        self.load_seconds = time.perf_counter() - start
        return self.read_count

    def install(self, cache: Any, llama: Any) -> None:
        """Put every known state into a prompt cache (after loading, and after it was emptied)."""
        for state in self.states.values():
            cache[state.tokens] = llama_state(state, llama)

    def expect(self, system: str | None) -> None:
        """Before a call: its fixed text (the system message; None: none)."""
        self._system = system

    def boundary(self, llama: Any, prompt: Sequence[int]) -> int:
        """The block boundary to take a state at in ``prompt`` (0: none wanted)."""
        if not self._system:
            return 0
        fixed = self._fixed.get(self._system)
        if fixed is None or tuple(prompt[: len(fixed)]) != fixed:
            pieces = [llama.detokenize([token], special=True) for token in prompt]
            end = fixed_prefix_length(pieces, self._system.encode("utf-8"))
            fixed = tuple(prompt[: self.schedule.floor(end)])
            self._fixed[self._system] = fixed
        return 0 if not fixed or fixed in self.states else len(fixed)

    def capture(self, llama: Any) -> None:
        """Keep the context's state now (its first ``boundary`` tokens are evaluated), written by ``flush``."""
        state = capture_state(llama)
        if state.tokens not in self.states:  # (the call's own state goes into the prompt cache after it, as always)
            self.states[state.tokens] = state
            self._pending.append(state)

    def flush(self) -> int:
        """Write the states taken since the last flush (after a call, outside its timing); how many were written."""
        pending, self._pending = self._pending, []
        return sum(self.write(state) for state in pending)


def stored_prefixes(cache_dir: Path) -> list[dict[str, Any]]:
    """What the home's cache holds, one entry per key folder (newest first): the model file, threads, extra buffers,
    how many states and their bytes. Read from the JSON beside each state; folders with no readable state are left
    out. For ``reagent doctor``: nothing is loaded or checked against a model here."""
    out = []
    try:
        folders = sorted((f for f in (Path(cache_dir) / FOLDER).iterdir() if f.is_dir()), key=_mtime, reverse=True)
    except OSError:
        return []
    for folder in folders:
        identity: dict[str, Any] = {}
        states, size = 0, 0
        for meta in folder.glob("*.json"):
            try:
                data = json.loads(meta.read_text(encoding="utf-8"))
                if not isinstance(data, dict):  # not a file this module wrote
                    continue
                size += meta.with_suffix(".state").stat().st_size
            except (OSError, ValueError):
                continue
            states += 1
            identity = data.get("identity") if isinstance(data.get("identity"), dict) else identity
        if states:
            out.append({"key": folder.name, "model": Path(str(identity.get("model", "?"))).name,
                        "threads": identity.get("threads"), "extra_buffers": identity.get("extra_buffers"),
                        "prefill_block": identity.get("prefill_block"),
                        "cpu": identity.get("cpu"), "states": states, "bytes": size})
    return out


def open_warm_prefixes(llama: Any, model: Path, cache_dir: Path | None, *, threads: int, block: "int | BlockSchedule",
                       extra_buffers: bool | None, gpu_layers: int) -> WarmPrefixes:
    """The warm prefixes of a just-loaded model, read from ``cache_dir`` and put into its prompt cache."""
    identity = identity_of(llama, model, threads=threads, block=block, extra_buffers=extra_buffers,
                           gpu_layers=gpu_layers)
    warm = WarmPrefixes(cache_dir, identity, block=block)
    warm.load(llama)
    return warm
