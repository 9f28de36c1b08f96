"""Reading a run: load it from the event log, show it in the terminal or as an HTML page.

    with EventLog(path, read_only=True) as log:
        trace = load_trace(log, resolve_run_id(log, "last"))
    render(trace, rich.console.Console())      # terminal timeline (reagent_local.trace.terminal)
    write_html(trace, "run.html")              # one self-contained page
"""

from .html import render_html, write_html
from .load import load_trace
from .model import Trace
from .runs import export_run, list_runs, resolve_run_id

__all__ = ["Trace", "export_run", "list_runs", "load_trace", "render_html", "resolve_run_id", "write_html"]
