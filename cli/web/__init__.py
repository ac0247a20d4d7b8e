"""The local HTTP API and dashboard page (Starlette), behind one guard."""
