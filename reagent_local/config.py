"""Configuration as frozen dataclasses, with one override order.

defaults < reagent.toml < environment (REAGENT_<SECTION>_<FIELD>) < CLI flags.

The TOML file is ``$REAGENT_CONFIG`` if set, else ``reagent.toml`` in the current
directory, else ``reagent.toml`` in the home folder. Sections mirror the dataclasses::

    [llm]
    model = "qwen2.5-coder-0.5b"
    [retrieval]
    top_k = 4
"""

from __future__ import annotations

import dataclasses
import os
import sys
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Mapping

from .errors import ConfigError
from .paths import default_home

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


@dataclass(frozen=True)
class PathsConfig:
    """Folders for generated files; all default to the home folder."""

    home: Path = field(default_factory=default_home)
    models_dir: Path | None = None
    indexes_dir: Path | None = None
    cache_dir: Path | None = None
    log_path: Path | None = None

    @property
    def models(self) -> Path:
        return Path(self.models_dir) if self.models_dir else Path(self.home) / "models"

    @property
    def indexes(self) -> Path:
        return Path(self.indexes_dir) if self.indexes_dir else Path(self.home) / "indexes"

    @property
    def cache(self) -> Path:
        return Path(self.cache_dir) if self.cache_dir else Path(self.home) / ".cache"

    @property
    def log(self) -> Path:
        return Path(self.log_path) if self.log_path else Path(self.home) / "reagent-log.duckdb"


@dataclass(frozen=True)
class LLMConfig:
    """Which GGUF model answers and how llama.cpp runs it."""

    model: str = "qwen2.5-coder-1.5b"  # a registry name or a path to a .gguf file
    n_ctx: int = 4096
    n_threads: int | None = None  # None: the machine's physical cores
    n_gpu_layers: int = -1  # -1: all layers when llama.cpp has a GPU backend
    chat_format: str | None = None  # None: the GGUF's own chat template (required)
    seed: int = 0
    temperature: float = 0.0
    max_tokens: int = 256
    prompt_cache_mb: int = 1024  # RAM for the KV states of recent prompts, reused across roles (0: off)
    # prompts are evaluated in aligned blocks of this many tokens, so an answer does not depend on the
    # prompts evaluated before it (reagent_local/runtime/prefill.py); 0: llama.cpp's own, history-dependent way
    prefill_block: int = 64
    # from this position on the blocks are this many tokens (a multiple of prefill_block; 0: prefill_block
    # everywhere): llama.cpp evaluates a prompt faster in larger blocks, and past the roles' fixed
    # instructions there is little for a smaller block to reuse
    prefill_wide_block: int = 256
    # keep the KV state of each role's fixed instructions in the home's cache (.cache/warm-prefixes/) and start
    # every process and every benchmark question with them: same answers, a role's first call skips their prefill
    # (reagent_local/runtime/warm.py); needs prompt_cache_mb and prefill_block above 0
    warm_prefixes: bool = True
    # llama.cpp's extra buffer types (it repacks weights for special matrix units): auto | on | off.
    # auto: off on CPUs that report Intel AMX, where llama.cpp 0.3.36's AMX kernels segfault on
    # Q4_K_M models (ggml-org/llama.cpp#20824); elsewhere the load probe times both settings once and keeps
    # the faster (runtime/load_probe.py). See reagent_local/runtime/cpu.py.
    extra_buffers: str = "auto"
    # send questions to a `reagent serve` running on the same home when it answers as this process would
    # (same model, index and settings; reagent_local/share/); false: always load the model here (`--local`)
    use_server: bool = True


@dataclass(frozen=True)
class RetrievalConfig:
    """Which index to search and how."""

    index: str = "enwiki-sample"
    embedder: str = "all-MiniLM-L6-v2"  # the packaged model, or a local SentenceTransformer folder
    embedder_backend: str = "onnx-int8"  # torch | onnx (fp32) | onnx-int8: how the embedder runs (docs/retrieval.md)
    mode: str = "hybrid"  # dense | sparse | hybrid
    top_k: int = 5
    passage_chars: int = 700  # passages are cut to this many characters in prompts
    # above 0, the ReAgent retriever shows a longer passage as its first sentence and the sentences sharing
    # most words with the query, in about this many characters; 0: cut at passage_chars as the baselines do.
    # Off since the dev ablation: 500 against 0 was +.013 F1 [-.019, +.044] on the 240 dev questions (10 fixed,
    # 6 broken) for 6% fewer prompt tokens (docs/benchmarks.md, "Ablations").
    focus_chars: int = 0
    rrf_k: int = 60
    use_kg: bool = True
    nprobe: int = 0  # IVF-PQ indexes: cells scanned per search (0: the index's own default, in its manifest)
    max_file_mb: float = 100.0  # folders of documents: a larger file is skipped and named (a log or a dump)


# The backtracking ablation modes and what each switches on: (local, global).
BACKTRACKING: dict[str, tuple[bool, bool]] = {
    "none": (False, False), "local": (True, False), "global": (False, True), "both": (True, True)}


# The question-shape rules on by default (docs/benchmarks.md, "Ablations", dev questions at 5e32365). Alone,
# only compare-options and chain-last-step cost F1 beyond their interval when switched off; switching off all
# the others together cost .041 F1 [+.011, +.073] (13 answers fixed by them, 2 broken), so the group stays,
# less the rules whose own removal cost nothing or helped, and those that never acted: those 8 were removed
# with their code on 2026-12-07 (rules.REMOVED_RULES). ``rules = ["all"]`` is every rule that remains.
DEFAULT_RULES: tuple[str, ...] = ("either-or-steps", "single-step-verbatim", "split-the-question", "anchor-each-step",
                                  "not-in-question", "off-subject", "chain-last-step", "both-yes", "compare-options",
                                  "option-grammar", "either-or-trust")


# Signals removed with the code that raised them. Naming one in ``pipeline.signals_off`` asks for it silenced,
# which is what the code now always does: the name is accepted and dropped (a config, REAGENT_PIPELINE_SIGNALS_OFF
# or an old run's config.json that copied an old default keeps working, and resolves as if it had not named it).
# No signal is left that ``signals_off`` switches: each that remains has a setting of its own (SIGNAL_SWITCHES).
_ESCALATIONS_GONE = "the assembler's escalations across steps were removed (decided on dev: docs/repairs.md)"
REMOVED_SIGNALS: dict[str, str] = {
    **{name: _ESCALATIONS_GONE for name in ("value-conflict", "broken-bridge", "unfounded-step")},
    "check-failed": "the verifier's retry of an answer that failed a check was removed on 2026-12-07 (silenced by "
                    "default since the train ablation; on dev it changed no answer: docs/changelog.md)"}
# The signals that remain and the setting that switches each off.
SIGNAL_SWITCHES = {"low-confidence": "min_confidence = 0", "off-subject": "the doubt rule off-subject (rules)",
                   "two-roads": "two_roads = false"}


@dataclass(frozen=True)
class PipelineConfig:
    """The ReAgent loop's switches and per-question budgets."""

    backtracking: str = "both"  # none | local | global | both
    max_subquestions: int = 4
    max_retrieval_rounds: int = 3
    max_backtrack_depth: int = 2
    max_llm_calls: int = 40
    max_seconds: float = 600.0
    max_question_chars: int = 2000
    answer_fallback: bool = True  # no answer through the plan: answer the whole question from its passages
    two_roads: bool = True  # with global backtracking: answer the whole question too; a disagreement is a conflict
    # a checked step answer the model is less sure of is retried once (local backtracking); on the tune
    # questions a step under 0.7 marked a wrong final answer (docs/benchmarks.md, "The model's confidence")
    min_confidence: float = 0.7
    chain_trust: float = 0.5  # a chain decided by a rule from checked steps at least this sure is not in doubt
    options_trust: float = 0.3  # an either-or chain whose facts are all at least this sure is not in doubt
    roads_margin: float = 0.3  # when both roads are in doubt, a confidence lead that settles them
    role_models: Mapping[str, str] = field(default_factory=dict)  # role -> model, optional
    # question-shape rules (reagent_local.rules): "all", names, "-name" to switch one off (a removed one: dropped)
    rules: tuple[str, ...] = DEFAULT_RULES
    signals_off: tuple[str, ...] = ()  # only names of REMOVED_SIGNALS, accepted and dropped: nothing left to silence
    trust_file: Path | None = None  # a trust model fitted by `reagent bench fit-trust --out`; None: the package's

    @property
    def local_backtracking(self) -> bool:
        return BACKTRACKING[self.backtracking][0]

    @property
    def global_backtracking(self) -> bool:
        return BACKTRACKING[self.backtracking][1]


@dataclass(frozen=True)
class Config:
    """The whole configuration."""

    paths: PathsConfig = field(default_factory=PathsConfig)
    llm: LLMConfig = field(default_factory=LLMConfig)
    retrieval: RetrievalConfig = field(default_factory=RetrievalConfig)
    pipeline: PipelineConfig = field(default_factory=PipelineConfig)


_SECTIONS = {f.name: f for f in fields(Config)}
_CHOICES = {
    ("retrieval", "mode"): {"dense", "sparse", "hybrid"},
    ("retrieval", "embedder_backend"): {"torch", "onnx", "onnx-int8"},
    ("pipeline", "backtracking"): set(BACKTRACKING),
    ("llm", "extra_buffers"): {"auto", "on", "off"},
}


# Settings that were removed: the value under which a run behaved as the code does now, and why the setting went.
# A config file, variable or option that still sets one is told so; an old run's config.json holding that value
# still rebuilds (``inert_removed``: `bench ablate` against a baseline run before the removal).
_ROUTER_GONE = "the learned router was removed on 2026-12-07 (it lost on dev and stayed off: docs/changelog.md)"
REMOVED: dict[tuple[str, str], tuple[Any, str]] = {
    ("pipeline", "router"): ("off", _ROUTER_GONE + "; the supervisor settles the two roads as router = \"off\" did"),
    ("pipeline", "router_file"): (None, _ROUTER_GONE),
    # max_replans = 1 behaved otherwise at every commit (a new plan for a failed step; from 7915b5c a second plan
    # for a caught chain): only 0 is the loop as it runs now
    ("pipeline", "max_replans"): (0, "replanning (a new plan for a caught chain) was removed (docs/repairs.md, "
                                     "\"The second plan\"); the loop runs as max_replans = 0 did"),
    ("pipeline", "read_trusted_chains"): (False, "reading the whole question for chains a rule trusted was removed on "
                                                 "2026-12-07 (tried on the tune questions and left off: "
                                                 "docs/changelog.md); a trusted chain's answer stands unread"),
}


# Settings added since records began, at the value that gives the answers of the code before them: a baseline
# configuration written without one is rebuilt with it (bench ablate), not with today's default.
ADDED: dict[tuple[str, str], Any] = {
    ("llm", "prefill_wide_block"): 0,  # blocks of prefill_block everywhere before it
}


def inert_removed(dotted: str, value: Any) -> bool:
    """Whether ``section.name = value`` is a removed setting at the value that behaves as the code does now."""
    section, _, name = dotted.partition(".")
    gone = REMOVED.get((section, name))
    return gone is not None and value == gone[0]


def _coerce(section: str, name: str, target: dataclasses.Field, value: Any) -> Any:
    """Convert a TOML/env/CLI value to the field's type, or raise ConfigError."""
    where = f"{section}.{name}"
    type_name = str(target.type)
    try:
        if value is None:
            out = None
        elif type_name.startswith("tuple"):
            items = value.split(",") if isinstance(value, str) else list(value)
            out = tuple(str(v).strip() for v in items if str(v).strip())
        elif "Mapping" in type_name:
            if not isinstance(value, Mapping):
                raise ValueError("expected a table")
            out = dict(value)
        elif "Path" in type_name:
            out = Path(str(value)).expanduser()
        elif type_name.startswith("bool"):
            if isinstance(value, str):
                low = value.strip().lower()
                if low not in {"1", "0", "true", "false", "yes", "no", "on", "off"}:
                    raise ValueError("expected true or false")
                out = low in {"1", "true", "yes", "on"}
            else:
                out = bool(value)
        elif type_name.startswith("int"):
            if isinstance(value, str) and value.strip().lower() in {"", "none", "auto"} and "None" in type_name:
                out = None
            else:
                out = int(value)
        elif type_name.startswith("float"):
            out = float(value)
        else:
            out = None if (isinstance(value, str) and value.lower() == "none" and "None" in type_name) else str(value)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"invalid value {value!r} for {where}: {exc}", hint=f"expected {type_name}") from None
    if (section, name) == ("pipeline", "rules"):
        from .rules import resolve  # a wrong rule name is a config error, not a crash later
        from .rules.registry import without_removed

        out = without_removed(out)  # a removed rule switched off is dropped, switched on refused
        resolve(out)
    if (section, name) == ("pipeline", "signals_off"):
        out = _check_signals(out)
    choices = _CHOICES.get((section, name))
    if choices is not None and out not in choices:
        raise ConfigError(f"invalid value {value!r} for {where}", hint=f"choose one of {sorted(choices)}")
    return out


def signal_problem(name: str) -> tuple[str, str]:
    """Why ``name`` cannot be silenced or switched on through ``pipeline.signals_off`` (the problem and a hint):
    no signal is left that it switches."""
    if name in REMOVED_SIGNALS:
        return f"{name} was removed", f"{REMOVED_SIGNALS[name]}; it never fires, so there is nothing to switch"
    if name in SIGNAL_SWITCHES:
        return f"{name} has its own switch", f"use {SIGNAL_SWITCHES[name]} instead"
    return f"no signal named {name!r}", (f"the signals are {', '.join(SIGNAL_SWITCHES)}, each with a setting of its "
                                         f"own; signals_off only accepts the removed {', '.join(REMOVED_SIGNALS)}")


def _check_signals(names: tuple[str, ...]) -> tuple[str, ...]:
    """``pipeline.signals_off`` without the removed signals (silenced for good, so always empty); a ConfigError for
    any other name."""
    for name in names:
        if name not in REMOVED_SIGNALS:
            problem = signal_problem(name)
            raise ConfigError(f"pipeline.signals_off: {problem[0]}", hint=problem[1])
    return ()


def _apply(config: Config, updates: Mapping[str, Mapping[str, Any]], origin: str) -> Config:
    """Return config with updates[section][field] applied; unknown keys are errors."""
    for section, values in updates.items():
        if section not in _SECTIONS:
            raise ConfigError(f"unknown section [{section}] in {origin}", hint=f"known: {sorted(_SECTIONS)}")
        current = getattr(config, section)
        known = {f.name: f for f in fields(current)}
        changes = {}
        for name, value in values.items():
            if (section, name) in REMOVED:
                raise ConfigError(f"{section}.{name} in {origin} is no longer a setting",
                                  hint=f"{REMOVED[section, name][1]}; delete it")
            if name not in known:
                raise ConfigError(f"unknown setting {section}.{name} in {origin}", hint=f"known: {sorted(known)}")
            changes[name] = _coerce(section, name, known[name], value)
        config = replace(config, **{section: replace(current, **changes)})
    return config


def apply_updates(config: Config, updates: Mapping[str, Mapping[str, Any]], origin: str) -> Config:
    """``config`` with ``updates[section][field]`` applied and validated as a config file's are (ConfigError)."""
    return _apply(config, updates, origin)


def find_config_file(env: Mapping[str, str]) -> Path | None:
    """The reagent.toml to read, if any."""
    if env.get("REAGENT_CONFIG"):
        path = Path(env["REAGENT_CONFIG"]).expanduser()
        if not path.is_file():
            raise ConfigError(f"REAGENT_CONFIG points at {path}, which does not exist")
        return path
    for candidate in (Path.cwd() / "reagent.toml", default_home() / "reagent.toml"):
        if candidate.is_file():
            return candidate
    return None


# One folder of models for many homes: REAGENT_MODELS is paths.models_dir (REAGENT_PATHS_MODELS_DIR, its long
# name, is the same setting; both set to different folders is an error rather than a silent choice).
MODELS_ENV = "REAGENT_MODELS"
_MODELS_LONG_ENV = "REAGENT_PATHS_MODELS_DIR"


def _from_env(env: Mapping[str, str]) -> dict[str, dict[str, str]]:
    """REAGENT_LLM_MODEL=... -> {"llm": {"model": ...}}; REAGENT_HOME -> paths.home; REAGENT_MODELS -> paths.models_dir."""
    out: dict[str, dict[str, str]] = {}
    if env.get("REAGENT_HOME"):
        out.setdefault("paths", {})["home"] = env["REAGENT_HOME"]
    short, long = env.get(MODELS_ENV), env.get(_MODELS_LONG_ENV)
    if short and long and Path(short).expanduser() != Path(long).expanduser():
        raise ConfigError(f"{MODELS_ENV}={short} and {_MODELS_LONG_ENV}={long} name two model folders",
                          hint=f"set only one of them ({MODELS_ENV} is the short name of paths.models_dir)")
    if short:
        out.setdefault("paths", {})["models_dir"] = short
    for key, value in env.items():
        if not key.startswith("REAGENT_") or key in {"REAGENT_HOME", "REAGENT_CONFIG", MODELS_ENV}:
            continue
        rest = key[len("REAGENT_"):].lower()
        for section in _SECTIONS:
            if rest.startswith(section + "_"):
                out.setdefault(section, {})[rest[len(section) + 1:]] = value
                break
    return out


def load_config(
    overrides: Mapping[str, Any] | None = None,
    *,
    env: Mapping[str, str] | None = None,
    toml_path: Path | None = None,
) -> Config:
    """Build the configuration: defaults < TOML < environment < ``overrides``.

    ``overrides`` maps dotted names to values (``{"llm.model": "x"}``); None values
    are ignored so CLI options that were not given do not override anything.
    """
    env = os.environ if env is None else env
    config = Config()
    path = toml_path or find_config_file(env)
    if path is not None:
        try:
            data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise ConfigError(f"cannot read config file {path}: {exc}", hint="fix the TOML syntax or remove the file") from None
        config = _apply(config, data, str(path))
    config = _apply(config, _from_env(env), "the environment")
    nested: dict[str, dict[str, Any]] = {}
    for dotted, value in (overrides or {}).items():
        if value is None:
            continue
        section, _, name = dotted.partition(".")
        nested.setdefault(section, {})[name] = value
    return _apply(config, nested, "command-line options")


def models_origin(config: Config, env: Mapping[str, str] | None = None, toml_path: Path | None = None) -> str:
    """Which setting put the models folder where it is, in words (for `reagent doctor` and `models list`)."""
    env = os.environ if env is None else env
    for key in (MODELS_ENV, _MODELS_LONG_ENV):
        if env.get(key):
            return key
    if config.paths.models_dir:
        try:
            path = toml_path or find_config_file(env)
        except ConfigError:
            path = None
        return f"paths.models_dir in {path}" if path is not None else "paths.models_dir"
    return "REAGENT_HOME (its models/ folder)" if env.get("REAGENT_HOME") else "the home (its models/ folder)"
