"""Agent sources: discovery, bounded capture into the log, restore, and pure parsers."""
