"""Reaching Ray: import it (with the install hint), check an address answers, start or join a cluster."""

from __future__ import annotations

import logging
import os
import signal
import socket
import sys
import tempfile
import threading
from contextlib import contextmanager
from types import ModuleType
from typing import Any, Iterator

from ..errors import ClusterError

INSTALL_HINT = 'install the cluster extra: pip install -e ".[cluster]" (in this checkout), or pip install "ray>=2.9,<3"'
START_HINT = ("start a cluster there with `ray start --head --port=6379` and join each worker machine with "
              "`ray start --address=HEAD_IP:6379`; or pass --ray without an address to use this machine alone")
CONNECT_SECONDS = 5.0
# Workers read no model hub and print no tokenizer warnings, as in the CLI process.
WORKER_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}


def require_ray() -> ModuleType:
    """The ``ray`` module, or a ClusterError saying how to install it."""
    try:
        import ray
    except ImportError:
        raise ClusterError("--ray needs Ray, which is not installed in this environment", hint=INSTALL_HINT) from None
    return ray


def host_port(address: str) -> tuple[str, int] | None:
    """(host, port) of a ``HOST:PORT`` or ``ray://HOST:PORT`` address; None for ``auto``."""
    if address == "auto":
        return None
    bare = address.split("://", 1)[-1].rstrip("/")
    host, sep, port = bare.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise ClusterError(f"{address!r} is not a Ray address",
                           hint="pass HOST:PORT (the head node's GCS port, 6379 by default), ray://HOST:10001 or auto")
    return host.strip("[]"), int(port)


def check_answers(address: str, timeout: float = CONNECT_SECONDS) -> None:
    """Raise a ClusterError unless something accepts connections at the address (ray.init would retry for minutes)."""
    where = host_port(address)
    if where is None:
        return
    try:
        socket.create_connection(where, timeout=timeout).close()
    except OSError as exc:
        reason = "timed out" if isinstance(exc, socket.timeout) else (exc.strerror or str(exc))
        raise ClusterError(f"no Ray cluster answers at {address} ({reason} after trying for up to {timeout:.0f} s)",
                           hint=START_HINT) from None


@contextmanager
def _quiet_stderr(active: bool) -> Iterator[None]:
    """Hold back what Ray's C++ core prints to stderr while it joins a cluster (a retry warning a second)."""
    if not active:
        yield
        return
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)


@contextmanager
def ray_session(address: str | None = None, *, num_cpus: int | None = None) -> Iterator[ModuleType]:
    """Ray, connected for the duration: a cluster at ``address``, or one started here (``num_cpus`` of this machine).

    When Ray is already initialised in this process (a notebook, a test fixture) it is
    used as it is and left running.
    """
    ray = require_ray()
    if ray.is_initialized():
        yield ray
        return
    kwargs: dict[str, Any] = {"logging_level": logging.ERROR, "log_to_driver": False,
                              "runtime_env": {"env_vars": dict(WORKER_ENV)}}
    if address:
        check_answers(address)
        kwargs["address"] = address
    else:
        kwargs.update(address="local", num_cpus=num_cpus, include_dashboard=False)
    previous_sigterm = signal.getsignal(signal.SIGTERM)  # ray.init replaces it; given back at the end
    try:
        with _quiet_stderr(bool(address)):
            ray.init(**kwargs)
    except ConnectionError as exc:
        _restore_sigterm(previous_sigterm)
        if address == "auto":
            raise ClusterError("no Ray cluster is running on this machine (--ray auto)", hint=START_HINT) from None
        raise ClusterError(f"no Ray cluster answers at {address} (a connection opens there, but Ray did not "
                           f"answer: {exc})",
                           hint=START_HINT) from None
    except (RuntimeError, ValueError) as exc:  # e.g. the cluster runs another Ray version
        _restore_sigterm(previous_sigterm)
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ClusterError(f"could not start or join Ray ({first})",
                           hint="every machine needs the same Ray and Python versions; " + INSTALL_HINT) from None
    try:
        yield ray
    finally:
        ray.shutdown()
        _restore_sigterm(previous_sigterm)


def _restore_sigterm(handler: Any) -> None:
    if handler is not None and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, handler)


def cluster_cpus(ray: ModuleType) -> int:
    """CPUs the cluster offers (at least 1)."""
    return max(1, int(ray.cluster_resources().get("CPU", 1)))


def node_info() -> dict[str, Any]:
    """Where the calling worker runs: host name, Ray node id, process id."""
    import ray

    return {"host": socket.gethostname(), "node": ray.get_runtime_context().get_node_id(), "pid": os.getpid()}


def error_text(exc: BaseException) -> str:
    """One readable line (two with a hint) for an error raised on a worker, without Ray's traceback."""
    cause = getattr(exc, "cause", None) or exc  # RayTaskError carries the worker's exception
    if hasattr(cause, "message") and hasattr(cause, "hint"):  # a ReagentError
        text = cause.message
    else:
        text = str(cause).strip()
    first = text.splitlines()[0] if text else ""
    return f"{type(cause).__name__}: {first}" if first else type(cause).__name__
