"""SHA-256 and BLAKE2b without loading OpenSSL for a small amount of hashing.

`import hashlib` loads OpenSSL's `_hashlib` (and libcrypto) at once: ~10 M instructions,
~3 % of a one-shot +1 `capture` (docs/history/performance-journal.md "Hashing"), which hashes
a few tens of KB. CPython's own SHA-256 (`_sha256` on 3.11, `_sha2` from 3.12) gives the very
same digests, about as fast on short inputs and ~5x slower per byte on long ones, so:

- `sha256_for(nbytes)` is the SHA-256 constructor to hash about `nbytes` more bytes with:
  CPython's own while this process has asked for at most `OWN_BYTES` (1 MiB) in all,
  OpenSSL's (`hashlib.sha256`, imported then) from then on — a cold capture, a rebuild and
  every bulk reader hash at OpenSSL's speed after their first MiB; a +1 never loads it;
- `spent(nbytes)` counts bytes a caller hashed with a constructor it took earlier (the
  appender's hot loop takes one per batch);
- `blake2b` is CPython's `_blake2.blake2b`, which is what `hashlib.blake2b` is.

Which implementation hashed never shows in a result: the chain (`eventlog.chain`), keys and
ids are the same bytes either way.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Protocol

OWN_BYTES = 1 << 20


class Hash(Protocol):
    """What both implementations' hash objects offer (hashlib's `HASH`)."""

    def update(self, data: bytes | bytearray | memoryview, /) -> None: ...

    def digest(self) -> bytes: ...

    def hexdigest(self) -> str: ...


Constructor = Callable[..., Hash]


def _own_sha256() -> Constructor | None:
    for name in ("_sha2", "_sha256"):  # 3.12+, 3.11
        try:
            fn: Constructor = importlib.import_module(name).sha256
            return fn
        except (ImportError, AttributeError):
            continue
    return None


def _own_blake2b() -> Constructor:
    try:
        fn: Constructor = importlib.import_module("_blake2").blake2b
    except (ImportError, AttributeError):
        import hashlib

        fn = hashlib.blake2b
    return fn


_own = _own_sha256()
_left = [OWN_BYTES if _own is not None else -1]
_bulk: list[Constructor] = []  # hashlib.sha256 once the budget is spent
blake2b = _own_blake2b()


def sha256_for(nbytes: int) -> Constructor:
    """The SHA-256 constructor for about `nbytes` more bytes (see the module docstring)."""
    if _bulk:
        return _bulk[0]
    left = _left[0] - nbytes
    if left >= 0 and _own is not None:
        _left[0] = left
        return _own
    import hashlib

    _left[0] = -1
    _bulk.append(hashlib.sha256)
    return hashlib.sha256


def spent(nbytes: int) -> None:
    """Count `nbytes` hashed with a constructor taken before (`sha256_for(0)`)."""
    if not _bulk:
        _left[0] -= nbytes


def sha256(data: bytes = b"") -> Hash:
    """A SHA-256 object over `data` (`hashlib.sha256(data)`, the same digest)."""
    return sha256_for(len(data))(data)
