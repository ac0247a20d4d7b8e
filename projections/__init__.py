"""Projections of the event log: history.db, its catch-up and rebuild, and the query API."""
