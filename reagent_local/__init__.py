"""reagent-local: offline ReAgent for multi-hop question answering."""

__version__ = "0.1.0"
