"""The readers' one error base (STYLE.md: one base per package, a few precise leaves)."""

from __future__ import annotations


class ReaderError(Exception):
    """Base of the readers' errors."""
