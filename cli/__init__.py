"""agentlog front ends: click commands, the MCP server, the HTTP API and answers."""
