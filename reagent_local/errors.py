"""Errors a user can act on: every message says what went wrong and what to do.

The CLI prints ``str(error)`` without a traceback and exits with ``error.exit_code``.
"""

from __future__ import annotations


class ReagentError(Exception):
    """Base class of every error meant for the user."""

    exit_code = 1

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        self.message = message
        self.hint = hint
        super().__init__(message if hint is None else f"{message}\n  -> {hint}")


class ConfigError(ReagentError):
    """A configuration file, environment variable or flag has an invalid value."""


class ModelNotFoundError(ReagentError):
    """A model name is unknown or its file has not been pulled."""


class ModelIntegrityError(ReagentError):
    """A model file has the wrong size or checksum, or is not GGUF."""


class ModelFetchError(ReagentError):
    """Fetching a model's packages failed (registry unreachable, disk full, ...)."""


class LLMOutputError(ReagentError):
    """A model's output was truncated or did not validate; carries the raw text."""

    def __init__(self, message: str, *, raw: str, hint: str | None = None) -> None:
        self.raw = raw
        super().__init__(f"{message}\n  raw output: {raw[:2000]!r}", hint=hint)


class LLMTruncatedError(LLMOutputError):
    """Generation stopped at the token limit before the JSON object was complete."""


class SchemaError(ReagentError):
    """An output schema cannot be turned into a llama.cpp grammar."""


class ChatTemplateError(ReagentError):
    """The GGUF has no chat template and no chat format was given."""


class IndexNotFoundError(ReagentError):
    """An index name does not exist under the indexes folder."""


class IndexBuildError(ReagentError):
    """Building an index failed; nothing half-built is left behind."""


class IndexCorruptError(ReagentError):
    """A file of a built index is truncated or damaged; the message names it and the rebuild command."""


class IndexMismatchError(ReagentError):
    """An index was built with a different embedder or dimension than configured."""


class CorpusFormatError(ReagentError):
    """An input file is not in the format it was read as (not a dump, bad JSONL, ...)."""


class DatasetFormatError(ReagentError):
    """A benchmark file is not in the official format of its dataset."""


class LogError(ReagentError):
    """The DuckDB event log cannot be opened or is locked by another writer."""


class RunNotFoundError(ReagentError):
    """A run id does not exist in the event log."""


class QuestionError(ReagentError):
    """A question is empty, too long, or otherwise unusable."""


class BenchRunError(ReagentError):
    """A benchmark run cannot start or resume (bad sample size, mismatched run folder, ...)."""


class ClusterError(ReagentError):
    """Ray is missing, a Ray address does not answer, or a shard or question failed on the cluster."""


class NativeCrashError(ReagentError):
    """llama.cpp crashed (a signal, not an exception) loading or running a model in the probe's child process."""
