"""Sections of `agentlog audit` and checks of `agentlog verify`, wired by name in `cli.hooks`."""
