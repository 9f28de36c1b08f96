"""`reagent mcp`: an MCP server over stdio, so that editors and desktop assistants can ask the six agents."""

from __future__ import annotations

import click


@click.command(name="mcp")
@click.option("--index", help="Default index for ask and search: a name or path, or several separated by commas "
                               "(default: config retrieval.index).")
@click.option("--model", help="Registry model name or path to a .gguf file (when no `reagent serve` can answer).")
@click.option("--local", is_flag=True, help="Load the model in this process even when a `reagent serve` of this home "
                                            "could answer.")
def mcp(index: str | None, model: str | None, local: bool) -> None:
    """Serve the tools ask, search, index_list and trace to an MCP client over stdio.

    An MCP client (an editor, a desktop assistant) starts this command itself; its
    configuration names `reagent mcp` (with REAGENT_HOME in its environment if the home is
    not the default). A `reagent serve` of the same home with the same model, index and
    settings answers the questions, so one model process stays loaded; otherwise the model
    loads here on the first question. Needs the `mcp` extra.
    """
    from ..errors import ConfigError
    from .common import config_from

    try:
        import mcp as _sdk  # noqa: F401
    except ImportError:
        from ..serve.mcp_server import INSTALL_HINT

        raise ConfigError("`reagent mcp` needs the `mcp` package, which is not installed", hint=INSTALL_HINT) from None
    from ..serve.mcp_server import run_stdio

    run_stdio(config_from(retrieval__index=index, llm__model=model, llm__use_server=False if local else None))
