"""Click command modules of the `agentlog` front end (registered in cli/main.py's COMMANDS)."""
