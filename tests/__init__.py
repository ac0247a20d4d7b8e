"""agentlog tests: real LMDB, SQLite, MCP over stdio, uvicorn and Chromium."""
