"""Connections that do not send a request's headers in time are closed (slowloris).

uvicorn's keep-alive timer runs only between requests, and only until the first byte of
the next one arrives: a client that dribbles a header line every few seconds could hold a
connection (and a file descriptor) forever. Promise: from the moment a connection opens,
and again after each response, a request's complete headers must arrive within
`timeout` seconds, else the connection is closed. A request whose headers arrived is
never cut short by this timer (bodies and long answers are not timed here).
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

HEADER_TIMEOUT_S = 10.0


def protocol(timeout: float = HEADER_TIMEOUT_S) -> type[H11Protocol]:
    """An h11 protocol class for `uvicorn.Config(http=...)` with the header deadline."""

    class HeaderDeadline(H11Protocol):
        _deadline: asyncio.TimerHandle | None = None
        _waiting_for: Any = None  # the cycle current when the wait began

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._arm()

        def _arm(self) -> None:
            self._disarm()
            self._waiting_for = self.cycle
            self._deadline = self.loop.call_later(timeout, self._late)

        def _disarm(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self.cycle is not self._waiting_for:  # a request's headers arrived
                self._disarm()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing() and self.cycle is not None and (
                    self.cycle.response_complete):
                self._arm()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def _late(self) -> None:
            self._deadline = None
            if self.cycle is self._waiting_for and not self.transport.is_closing():
                self.transport.close()

    return HeaderDeadline
