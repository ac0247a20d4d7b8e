"""The one gate in front of every route: Host, Origin, token/cookie, security headers.

Promises (checked in this order, before any route runs, for every path):
1. `Host` must be one of the allowed `host:port` names (loopback names with the server's
   port), else 403: a DNS-rebinding page cannot talk to us under its own name.
2. A cross-site request (`Origin` present and not this very origin, or
   `Sec-Fetch-Site: cross-site`) is refused with 403, GETs included: the data is private.
3. `GET …?token=T` with the right token answers 303 to the same URL without the token and
   sets an HttpOnly, SameSite=Strict session cookie (a random session id, never the
   token). A wrong token is 403.
4. Otherwise the request needs the session cookie or `Authorization: Bearer <token>`;
   without it the answer is 403 and no route code runs.
Every response, refusals included, carries a strict Content-Security-Policy (no inline
script), nosniff, no-referrer and no-store.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Iterable
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode

from starlette.types import ASGIApp, Message, Receive, Scope, Send

CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; "
    "form-action 'self'; frame-ancestors 'none'"
)
SECURITY_HEADERS: list[tuple[bytes, bytes]] = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"cache-control", b"no-store"),
    (b"x-frame-options", b"DENY"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
]


def loopback_hosts(port: int) -> set[str]:
    return {f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}"}


class Guard:
    """ASGI middleware enforcing the promises above."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        token: str,
        session: str,
        cookie_name: str,
        allowed_hosts: Iterable[str],
        any_host: bool = False,
    ) -> None:
        self.app = app
        self.token = token
        self.session = session
        self.cookie_name = cookie_name
        self.allowed_hosts = {h.lower() for h in allowed_hosts}
        self.any_host = any_host

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            if scope["type"] == "lifespan":
                await self.app(scope, receive, send)
            return  # websockets are not served

        async def send_secured(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [
                    (k, v) for k, v in message.get("headers", [])
                    if k.lower() not in {name for name, _ in SECURITY_HEADERS}
                ]
                message = {**message, "headers": headers + SECURITY_HEADERS}
            await send(message)

        headers = _headers(scope)
        host = headers.get("host", "").lower()
        if not (self.any_host or host in self.allowed_hosts):
            await _refuse(send_secured, "host not allowed")
            return
        origin = headers.get("origin")
        if origin is not None and origin.lower() != f"{_scheme(scope)}://{host}":
            await _refuse(send_secured, "cross-origin request refused")
            return
        if headers.get("sec-fetch-site") == "cross-site":
            await _refuse(send_secured, "cross-site request refused")
            return
        query = parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
        if any(k == "token" for k, _ in query) and scope.get("method") == "GET":
            await self._exchange(scope, query, send_secured)
            return
        if not self._authenticated(headers):
            await _refuse(send_secured, "not authenticated: open the URL printed by "
                          "`agentlog serve` (it carries a token)")
            return
        await self.app(scope, receive, send_secured)

    def _authenticated(self, headers: dict[str, str]) -> bool:
        auth = headers.get("authorization", "")
        if auth[:7].lower() == "bearer ":
            return hmac.compare_digest(auth[7:].strip().encode(), self.token.encode())
        for part in headers.get("cookie", "").split(";"):
            name, _, value = part.strip().partition("=")
            if name == self.cookie_name and hmac.compare_digest(
                value.encode(), self.session.encode()
            ):
                return True
        return False

    async def _exchange(self, scope: Scope, query: list[tuple[str, str]], send: Send) -> None:
        given = [v for k, v in query if k == "token"]
        if len(given) != 1 or not hmac.compare_digest(given[0].encode(), self.token.encode()):
            await _refuse(send, "wrong token")
            return
        rest = [(k, v) for k, v in query if k != "token"]
        location = quote(scope.get("path", "/")) + (f"?{urlencode(rest)}" if rest else "")
        cookie = (
            f"{self.cookie_name}={self.session}; HttpOnly; SameSite=Strict; Path=/"
        )
        await send({
            "type": "http.response.start",
            "status": 303,
            "headers": [
                (b"location", location.encode("latin-1", "replace")),
                (b"set-cookie", cookie.encode()),
                (b"content-length", b"0"),
            ],
        })
        await send({"type": "http.response.body", "body": b""})


def _headers(scope: Scope) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in scope.get("headers", []):
        name = key.decode("latin-1").lower()
        if name in out and name != "cookie":
            out[name] = out[name] + "," + value.decode("latin-1")  # duplicates never match
        elif name == "cookie" and name in out:
            out[name] = out[name] + "; " + value.decode("latin-1")
        else:
            out[name] = value.decode("latin-1")
    return out


def _scheme(scope: Scope) -> str:
    scheme: Any = scope.get("scheme", "http")
    return str(scheme)


async def _refuse(send: Send, reason: str) -> None:
    body = json.dumps({"error": reason}).encode()
    await send({
        "type": "http.response.start",
        "status": 403,
        "headers": [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
        ],
    })
    await send({"type": "http.response.body", "body": body})
