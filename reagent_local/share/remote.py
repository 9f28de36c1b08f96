"""Questions and model calls answered by a `reagent serve` of the same home, as if answered here.

``RemoteAsker.ask`` returns the same ``Answer`` a local pipeline would (the server runs the same code
on the same model and index with this process's ``[pipeline]`` settings, and logs the run in the
same log). ``RemoteLLM`` is an ``LLM`` whose calls run on the server's model: a benchmark keeps its
own index, methods and log and sends only its model calls; the output is validated here exactly
as ``LlamaModel.generate_json`` validates it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Sequence, TypeVar

from pydantic import BaseModel

from ..config import Config
from ..reasoning.answer import Answer
from ..runtime.contention import Sharing
from ..runtime.llm import JsonResult, LLMCall, Message, check_grammar_limits, parse_json_output
from .client import ServerClient, ServerFailed, ServerUnavailable
from .compat import question_settings
from .presence import ServerInfo, live_servers

T = TypeVar("T", bound=BaseModel)
AGAIN = "ask again: with no server running, `reagent ask` loads its own model"


def _run_status(log_path: Path, run_id: str | None) -> str:
    """How the log shows a run now ('interrupted' once its server is gone)."""
    if run_id is None:
        return "not started"
    from ..core.log import EventLog

    try:
        with EventLog(log_path, read_only=True) as log:
            return str(log.get_run(run_id)["status"])
    except Exception:  # noqa: BLE001 - only for the message; the log's own errors show on the next command
        return "unknown"


def _alive(server: ServerInfo, home: Path) -> bool:
    return any(s.pid == server.pid and s.url == server.url for s in live_servers(home))


def failure(exc: ServerFailed, server: ServerInfo, config: Config) -> ServerFailed:
    """A failed served question as one error saying what happened to the run and what to do."""
    if not exc.gone:
        return exc
    status = _run_status(Path(config.paths.log), exc.run_id)
    run = f"run {exc.run_id} is {status} in the log" if exc.run_id else "no run was started"
    if _alive(server, Path(config.paths.home)):
        return ServerFailed(f"the connection to {server.describe()} broke while answering: {run}",
                            run_id=exc.run_id, gone=True, hint="ask again")
    return ServerFailed(f"{server.describe()} ended while answering: {run}", run_id=exc.run_id, gone=True, hint=AGAIN)


class RemoteAsker:
    """Asks one server; the answer is rebuilt from its ``reagent ask --json`` object."""

    def __init__(self, server: ServerInfo, config: Config,
                 on_event: Callable[[str, Any], None] | None = None) -> None:
        self.server = server
        self.config = config
        self.on_event = on_event
        self.client = ServerClient(server)

    def ask(self, question: str, *, should_stop: Callable[[], str | None] | None = None,
            history: Sequence[Any] = (), conversation: str = "") -> Answer:
        """Answer one question in the server's queue (after the conversation's earlier turns, if any)."""
        context = {"history": [t.to_dict() for t in history], "conversation": conversation} if history or conversation else {}
        try:
            data = self.client.ask(question, question_settings(self.config), on_event=self.on_event,
                                   should_stop=should_stop, context=context)
        except ServerFailed as exc:
            raise failure(exc, self.server, self.config) from None
        texts = {p["id"]: p.get("text", "") for p in data.get("passages", [])}
        return Answer.from_dict(data["answer"], texts)


class RemoteLLM:
    """The ``LLM`` interface over a server's model (``POST /api/llm``)."""

    def __init__(self, server: ServerInfo, model_id: str) -> None:
        self.server = server
        self.model_id = model_id
        self.client = ServerClient(server)
        self.sharing = Sharing(via="server")

    def load(self) -> None:
        """Nothing to load: the server holds the model."""

    def close(self) -> None:
        """Nothing to free."""

    def generate_json(self, messages: Sequence[Message], schema: type[T], *, max_tokens: int | None = None,
                      temperature: float | None = None, seed: int | None = None) -> JsonResult[T]:
        """One call on the server's model, validated here against ``schema``."""
        json_schema = schema.model_json_schema()
        check_grammar_limits(json_schema, schema.__name__)
        try:
            reply = self.client.generate({"messages": [dict(m) for m in messages], "json_schema": json_schema,
                                          "max_tokens": max_tokens, "temperature": temperature, "seed": seed})
        except (ServerFailed, ServerUnavailable) as exc:
            raise ServerFailed(f"{self.server.describe()} stopped answering this process's model calls ({exc.message})",
                               gone=True, hint="run the same command again (a benchmark: with --resume); with no "
                                               "server running it loads its own model") from None
        call = LLMCall(model_id=self.model_id, messages=tuple(dict(m) for m in messages), raw=reply["raw"],
                       prompt_tokens=int(reply["prompt_tokens"]), completion_tokens=int(reply["completion_tokens"]),
                       seconds=float(reply["seconds"]), finish_reason=reply["finish_reason"],
                       schema_name=schema.__name__,
                       token_logprobs=tuple((str(t), float(p)) for t, p in reply.get("token_logprobs") or ()))
        self.sharing.add(threads=int(reply.get("threads") or 0), seconds=call.seconds,
                         waited=float(reply.get("waited") or 0.0), others_cpu=reply.get("others_cpu"))
        return JsonResult(value=parse_json_output(call.raw, schema, call.finish_reason), call=call)


def served_model(config: Config, note: Callable[[str], None] | None = None) -> RemoteLLM | None:
    """A RemoteLLM on a compatible server of the home for a benchmark's calls, or None (``note`` says why)."""
    from .route import choose_route

    route = choose_route(config, calls_only=True)
    line = route.note("this benchmark")
    if line and note is not None:
        note(line)
    if route.server is None:
        return None
    from ..runtime.models import resolve_model

    return RemoteLLM(route.server, resolve_model(config.llm.model, config.paths.models)[1])
