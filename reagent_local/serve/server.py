"""Running the server: open the model and index once, bind safely, serve with uvicorn, stop without losing a run."""

from __future__ import annotations

import errno
import ipaddress
import signal
import socket
import threading
from typing import Any, Callable

from ..api import ReAgent
from ..config import Config
from ..errors import ReagentError
from ..reasoning.wiring import build_pipeline
from ..share.compat import identity
from .app import create_app
from .live import ObservedLog
from .service import LOOPBACK_HOSTS, STOPPED, ServeSettings, Service

GRACE_SECONDS = 10.0  # after Ctrl-C, how long open connections may take to finish before they are closed


def is_loopback(host: str) -> bool:
    """True for addresses only this machine can reach (127.0.0.0/8, ::1, localhost)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_binding(host: str, api_key: str | None) -> None:
    """Refuse to listen beyond this machine without an API key."""
    if not is_loopback(host) and not api_key:
        raise ReagentError(f"refusing to listen on {host}: other machines could use the model and read the log "
                           "without a key",
                           hint="pass --api-key KEY (clients send 'Authorization: Bearer KEY'; or set "
                                "REAGENT_API_KEY), or bind 127.0.0.1")


def bind(host: str, port: int) -> socket.socket:
    """A bound socket (port 0 picks a free one), or a ReagentError that says what to do."""
    try:
        family, _, _, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    except socket.gaierror as exc:
        raise ReagentError(f"cannot listen on {host!r}: {exc.strerror}", hint="give an IP address, e.g. 127.0.0.1") \
            from None
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise ReagentError(f"port {port} on {host} is already in use",
                               hint="choose another with --port, or stop what listens there") from None
        raise ReagentError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    sock.set_inheritable(True)
    return sock


def open_service(config: Config, *, host: str, api_key: str | None = None, max_queue: int = 8,
                 llm: Any = None, index: Any = None) -> Service:
    """The model, index and log opened once (the model loaded now, so the first question waits for nothing)."""
    log = ObservedLog(config.paths.log)
    try:
        pipeline = build_pipeline(config, llm=llm, index=index, log=log)
        for model in {id(m): m for m in (pipeline.llm, *pipeline.role_llms.values())}.values():
            if hasattr(model, "load"):
                model.load()
        if index is None:  # one search reads the index files and loads the query embedder now
            pipeline.retriever.search("warm up", k=1)
    except BaseException:
        log.close()
        raise
    settings = ServeSettings(model=config.llm.model, index=config.retrieval.index, api_key=api_key,
                             max_queue=max_queue, allowed_hosts=LOOPBACK_HOSTS if is_loopback(host) else None,
                             identity=identity(config))
    return Service(ReAgent(pipeline), settings)


def _uvicorn_server(service: Service, sock: socket.socket, log_level: str,
                    on_stop: Callable[[], None] | None = None) -> Any:
    import uvicorn

    class Server(uvicorn.Server):
        """uvicorn's server; on Ctrl-C the queue refuses waiting questions and the running run stops first."""

        def handle_exit(self, sig: int, frame: Any) -> None:
            if on_stop is not None:
                on_stop()
            service.stop(STOPPED)
            super().handle_exit(sig, frame)

    host, port = sock.getsockname()[:2]
    config = uvicorn.Config(create_app(service), host=host, port=port, log_level=log_level, access_log=False,
                            timeout_graceful_shutdown=GRACE_SECONDS, lifespan="on")
    return Server(config)


def serve(service: Service, sock: socket.socket, *, log_level: str = "warning",
          on_ready: Callable[[str], None] | None = None, on_stop: Callable[[], None] | None = None) -> None:
    """Serve until Ctrl-C (or SIGTERM); then every run this server started is finished or marked in the log.

    ``on_stop`` is called first when the stop signal arrives (the CLI withdraws its address there).
    """
    import asyncio

    server = _uvicorn_server(service, sock, log_level, on_stop)

    async def main() -> None:
        task = asyncio.create_task(server.serve(sockets=[sock]))
        while not server.started and not task.done():
            await asyncio.sleep(0.05)
        if server.started and on_ready is not None:
            host, port = sock.getsockname()[:2]
            on_ready(f"http://{'[' + host + ']' if ':' in host else host}:{port}")
        await task

    # uvicorn raises the signal that stopped it again once it has shut down: SIGTERM's default action
    # would end the process there, before the model and log are closed; make it a KeyboardInterrupt
    previous = signal.getsignal(signal.SIGTERM)
    main_thread = threading.current_thread() is threading.main_thread()
    if main_thread:
        signal.signal(signal.SIGTERM, _interrupt)
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass
    finally:
        if main_thread:
            signal.signal(signal.SIGTERM, previous)
        service.stop(STOPPED)
        _mark_unfinished(service)


def _interrupt(sig: int, frame: Any) -> None:
    raise KeyboardInterrupt


def _mark_unfinished(service: Service, wait: float = 5.0) -> None:
    """After a forced exit (Ctrl-C twice), wait a little for the running run, then mark it in the log."""
    worker = service.worker
    if worker is None or worker.join(wait):
        return
    job = worker.current
    if job is not None and job.run_id is not None:
        try:
            if service.log.get_run(job.run_id)["status"] == "running":
                service.log.finish_run(job.run_id, None, "cancelled", {}, error=STOPPED)
        except ReagentError:
            pass
