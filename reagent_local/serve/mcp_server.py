"""`reagent mcp`: the tools of ``mcp_tools.ReagentTools`` served over stdio with the official ``mcp`` SDK.

The SDK (the ``mcp`` extra) is imported only here, so the rest of the package runs without it.
While the server runs the SDK points file descriptor 1 at stderr, so llama.cpp's and the
library's own output never reaches the protocol's stream.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

from ..config import Config
from ..errors import ConfigError, ReagentError
from .mcp_tools import ReagentTools
from ..version import __version__

INSTALL_HINT = "install the MCP extra: pip install 'reagent-local[mcp]' (or pip install mcp)"

INSTRUCTIONS = (
    "Offline multi-hop question answering over local indexes (Wikipedia, folders of documents). "
    "ask: an answer with the sub-questions it was split into, the passages each came from (citations, with "
    "their index when several are searched), whether it is trusted, and a run id; trace: how that run went. "
    "search: ranked passages; index_list: the indexes to search (index 'a,b' searches several together)."
)


def _reported(tool: Callable[..., Any]) -> Callable[..., Any]:
    """A user's mistake (a ReagentError: unknown index, empty question) reaches the client as its message and hint."""
    from mcp.server.mcpserver.exceptions import ToolError

    @functools.wraps(tool)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return tool(*args, **kwargs)
        except ReagentError as exc:
            raise ToolError(str(exc)) from None

    return call


def build_server(tools: ReagentTools) -> Any:
    """An ``MCPServer`` offering ask, search, index_list and trace over ``tools``."""
    try:
        from mcp.server.mcpserver import MCPServer
    except ImportError:
        raise ConfigError("the MCP server needs the `mcp` package", hint=INSTALL_HINT) from None

    server = MCPServer(name="reagent", title="reagent-local", version=__version__, instructions=INSTRUCTIONS)

    def ask(question: str, index: str | None = None) -> dict[str, Any]:
        """Answer a (multi-hop) question offline with the six ReAgent agents.

        Returns the answer, `trusted` (false: uncertain, with the reason), the sub-questions with
        their answers and citations, the cited passages (id, title, index, source) and the run id
        (pass it to the trace tool). `index`: an index name, or several separated by commas
        (default: the configured one). A question can take minutes on a CPU.
        """
        return tools.ask(question, index)

    def search(query: str, index: str | None = None, k: int = 5, mode: str = "hybrid") -> list[dict[str, Any]]:
        """Search the local index (hybrid BM25 + dense by default) and return the k best passages.

        `index`: a name, or several separated by commas (rankings fused; each hit names its
        index). `mode`: dense, sparse or hybrid.
        """
        return tools.search(query, index, k, mode)

    def index_list() -> list[dict[str, Any]]:
        """The built indexes of this home: name, passages, embedder, source, and the default one."""
        return tools.index_list()

    def trace(run_id: str = "last") -> str:
        """A run's timeline as text: which agent said what, what was taken back and why, the answer.

        `run_id`: the id the ask tool returned, a unique prefix of one, or `last`.
        """
        return tools.trace(run_id)

    for tool in (ask, search, index_list, trace):
        server.add_tool(_reported(tool), name=tool.__name__)
    return server


def run_stdio(config: Config) -> None:
    """Serve the tools over stdin/stdout until the client closes the stream."""
    tools = ReagentTools(config)
    server = build_server(tools)
    try:
        server.run("stdio")
    finally:
        tools.close()
