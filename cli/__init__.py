"""agentlog's front ends and the application services they share (docs/ARCHITECTURE.md)."""

VERSION = "0.1.0"
