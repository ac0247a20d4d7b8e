"""The MCP front end: the stdio server and its registration with clients."""
