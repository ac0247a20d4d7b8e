"""Bench only: agentlog with secret redaction off, in every Python process started with this
folder on PYTHONPATH (`bench/cold.py --redaction` puts it there for its `redaction off`
column, and the processes agentlog starts inherit it). agentlog itself has no such switch."""

from projections import redact

redact.Redactor.redact = lambda self, text, gated=True: (text, None)  # type: ignore[method-assign]
