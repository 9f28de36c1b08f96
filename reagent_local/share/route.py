"""Where this process's questions go: to a compatible `reagent serve` of the same home, or to a model of its own.

``choose_route`` looks for live servers of the home (``share/presence.py``) and takes the first whose
identity equals this process's (``share/compat.py``); when servers run but none fits, the route
says why, so the user learns why this process loads its own model.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..config import Config
from .compat import identity, mismatch, model_identity
from .presence import ServerInfo, live_servers

LOCAL_HINT = "`--local` (or `[llm] use_server = false`) skips looking for a server"


@dataclass(frozen=True)
class Route:
    """A server to send questions (or model calls) to, or None with the reason a running one does not fit."""

    server: ServerInfo | None = None
    reason: str | None = None  # set when servers run but this process loads its own model

    def note(self, what: str = "this ask") -> str | None:
        """One line for the user: where the questions go, or why not to the running server; None: nothing to say."""
        if self.server is not None:
            return f"asking {self.server.describe()}"
        if self.reason:
            return f"loading the model here: {self.reason} ({LOCAL_HINT})"
        return None


def choose_route(config: Config, *, calls_only: bool = False, log_path: str | Path | None = None) -> Route:
    """The first live server of ``config``'s home that answers exactly as this process would, if any.

    ``calls_only``: the server only makes model calls (a benchmark keeps its own index and log),
    so only the code, the model and ``[llm]`` must match. ``log_path``: a log other than the home's.
    """
    if not config.llm.use_server:
        return Route()
    servers = list(live_servers(Path(config.paths.home)))
    if not servers:
        return Route()
    if log_path is not None and not calls_only and Path(log_path).resolve() != Path(config.paths.log).resolve():
        return Route(reason=f"this process logs to {log_path}, the server to the home's log")
    if calls_only and config.pipeline.role_models:
        return Route(reason="pipeline.role_models gives roles their own models; a served model is one model")
    mine = model_identity(config) if calls_only else identity(config)
    reasons = []
    for server in servers:
        theirs = server.identity
        if calls_only:
            theirs = {key: theirs.get(key) for key in mine}
        why = mismatch(mine, theirs)
        if why is None:
            return Route(server=server)
        reasons.append(f"{server.describe()} differs: {why}")
    return Route(reason=reasons[0] + (f" (and {len(reasons) - 1} more servers)" if len(reasons) > 1 else ""))
