"""Reading a run: load it from the event log, show it in the terminal or as an HTML page."""

from .load import load_trace
from .model import Trace

__all__ = ["load_trace", "Trace"]
