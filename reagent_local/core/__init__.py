"""The reversible core (no LLM): statements and states, conflicts, the event log, the channel, the workspace."""
