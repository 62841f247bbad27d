"""The door of `flow serve` over HTTP (docs/security.md, "Serving workflows"): who may call a
served file, from where, with what.

Like Jupyter's server, serving needs a credential unless the person says `--no-auth`: a
token generated at start and printed once (or read from the variable `--token-env` names),
and one more per `--issue-token NAME`, each its own *principal* (a caller whose A2A tasks
no other caller sees). Clients send `Authorization: Bearer <token>`. Whatever the address:
a request whose `Origin` is not the server's own or one the person allows
(`--allow-origin`) is refused (403), so a web page the person opens cannot drive the
server; on loopback only requests addressed to the bound address or a loopback name are
answered (421, DNS rebinding); and the A2A JSON-RPC endpoint takes only
`application/json` bodies (415), which a page cannot send without asking first.

Each guard is an ASGI wrapper of its own, so that each can be tested with the others in
place and switched off alone (tests/security/test_serve_door.py, test_serve_origins.py).
"""

from __future__ import annotations

import hmac
import ipaddress
import os
import re
import secrets
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

ASGIApp = Callable[[dict[str, Any], Callable[[], Awaitable[Any]], Callable[[Any], Awaitable[None]]], Awaitable[None]]

MAIN = "main"  # the principal of the main token (generated, or --token-env's)
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
_LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
NO_AUTH_WARNING = ("--no-auth: any program on this machine (any user of it, any container sharing its loopback) "
                   "can run these workflows with this command's grants, and sees every caller's tasks")


class ExposureError(ValueError):
    """A door `flow serve` will not open: no credential off loopback, a short token, a bad name or origin."""


def parse_address(text: str, what: str) -> tuple[str, int]:
    host, colon, port = text.rpartition(":")
    if not colon or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ExposureError(f"{what}: {text!r} is not HOST:PORT (e.g. 127.0.0.1:8765)")
    return host.strip("[]"), int(port)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def authority(host: str, port: int) -> str:
    """HOST:PORT as a URL writes it (an IPv6 address in brackets)."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


@dataclass(frozen=True)
class Door:
    """What a served HTTP address lets in. `principals` maps each token to the name of its
    principal; empty when the person opted out with `--no-auth` (every caller is then the one
    anonymous principal)."""

    host: str
    port: int
    principals: dict[str, str] = field(default_factory=dict)
    allowed_origins: frozenset[str] = frozenset()
    token_env: str | None = None

    @property
    def auth(self) -> bool:
        return bool(self.principals)

    def own_hosts(self) -> set[str]:
        """The `Host` values that address this server: the bound address, and on loopback its names."""
        hosts = {authority(self.host, self.port)}
        if is_loopback(self.host):
            hosts.update(f"{name}:{self.port}" for name in _LOOPBACK_NAMES)
        return hosts

    def origins(self) -> set[str]:
        """The origins a browser may call from: the server's own pages and those the person allows."""
        return {f"http://{host}" for host in self.own_hosts()} | set(self.allowed_origins)

    def banner(self) -> list[str]:
        """The lines `flow serve` prints when it listens: each generated token, once."""
        if not self.auth:
            return []
        lines = ["clients send `Authorization: Bearer <token>`"]
        for token, name in self.principals.items():
            if name == MAIN:
                lines.append(f"token: the value of ${self.token_env}" if self.token_env else f"token: {token}")
            else:
                lines.append(f"token for {name}: {token}")
        return lines


def open_door(host: str, port: int, *, token_env: str | None = None, no_auth: bool = False,
              issue: Iterable[str] = (), allow_origins: Iterable[str] = ()) -> Door:
    """The door of `flow serve` on HOST:PORT: a main token (from `token_env`, else generated),
    one generated token per issued name, and the allowed origins; or no credential at all with
    `no_auth`, which only loopback accepts."""
    issue, origins = list(issue), frozenset(_origin(o) for o in allow_origins)
    if no_auth:
        if not is_loopback(host):
            raise ExposureError(f"--no-auth on {host} would let anyone who reaches it run these workflows: "
                                "serve on loopback, or keep the token")
        if token_env or issue:
            raise ExposureError("--no-auth goes without --token-env and --issue-token")
        return Door(host, port, {}, origins)
    if token_env is not None:
        main = os.environ.get(token_env, "")
        if len(main) < 16:
            raise ExposureError(f"--token-env {token_env}: the variable must hold a token of at least 16 characters")
    else:
        main = secrets.token_urlsafe(32)
    principals = {main: MAIN}
    for name in issue:
        if not _NAME.fullmatch(name) or name == MAIN or name in principals.values():
            raise ExposureError(f"--issue-token {name!r}: a name of letters, digits, '.', '_' or '-', "
                                f"each once, and not {MAIN!r}")
        principals[secrets.token_urlsafe(32)] = name
    return Door(host, port, principals, origins, token_env)


def _origin(text: str) -> str:
    parts = urlsplit(text.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.path not in ("", "/") or parts.query:
        raise ExposureError(f"--allow-origin {text!r}: an origin is SCHEME://HOST[:PORT] (e.g. http://localhost:3000)")
    return f"{parts.scheme}://{parts.netloc.lower()}"


# -- the guards --------------------------------------------------------------------------------------
def _header(scope: dict[str, Any], name: bytes) -> bytes | None:
    for key, value in scope.get("headers") or []:
        if key.lower() == name:
            return bytes(value)
    return None


async def _refuse(send: Callable[[Any], Awaitable[None]], status: int, message: str,
                  headers: list[tuple[bytes, bytes]] | None = None) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), *(headers or [])]})
    await send({"type": "http.response.body", "body": b'{"error": "%s"}' % message.encode()})


def bearer_guard(app: ASGIApp, door: Door, public: Iterable[str] = ()) -> ASGIApp:
    """Every HTTP request needs `Authorization: Bearer <token>` of one of the door's principals
    (compared in constant time), except a GET of a `public` path; the principal's name goes
    to the app as the request's user (`scope["user"]`, Starlette's). Open when the door has
    no credentials (`--no-auth`)."""
    if not door.auth:
        return app
    from starlette.authentication import AuthCredentials, SimpleUser

    expected = [(f"Bearer {token}".encode(), name) for token, name in door.principals.items()]
    public_paths = set(public)

    async def guarded(scope: dict[str, Any], receive: Callable[[], Awaitable[Any]],
                      send: Callable[[Any], Awaitable[None]]) -> None:
        if scope.get("type") == "http" and not (scope.get("method") == "GET" and scope.get("path") in public_paths):
            given = _header(scope, b"authorization") or b""
            found = None
            for token, name in expected:  # every token compared: the time says nothing of which matched
                if hmac.compare_digest(given, token):
                    found = name
            if found is None:
                await _refuse(send, 401, "unauthorized", [(b"www-authenticate", b"Bearer")])
                return
            scope = {**scope, "user": SimpleUser(found), "auth": AuthCredentials(["authenticated"])}
        await app(scope, receive, send)

    return guarded


def origin_guard(app: ASGIApp, door: Door) -> ASGIApp:
    """A request that carries an `Origin` (a browser's, for a page's fetch or form) is refused
    (403) unless it is the server's own or one the person allowed: a web page on another
    origin cannot make the server run anything, whatever it sends."""
    allowed = {origin.encode() for origin in door.origins()}

    async def guarded(scope: dict[str, Any], receive: Callable[[], Awaitable[Any]],
                      send: Callable[[Any], Awaitable[None]]) -> None:
        origin = _header(scope, b"origin")
        if scope.get("type") == "http" and origin is not None and origin.lower() not in allowed:
            await _refuse(send, 403, "this origin may not call this server (flow serve --allow-origin)")
            return
        await app(scope, receive, send)

    return guarded


def loopback_host_guard(app: ASGIApp, door: Door) -> ASGIApp:
    """On loopback, only requests addressed to the bound address or a loopback name: a web page
    the person opens cannot reach the server by DNS rebinding (a name of its own that resolves
    to a loopback address is the page's origin, so the browser lets it read the answers)."""
    if not is_loopback(door.host):
        return app
    allowed = {host.encode() for host in door.own_hosts()}

    async def guarded(scope: dict[str, Any], receive: Callable[[], Awaitable[Any]],
                      send: Callable[[Any], Awaitable[None]]) -> None:
        if scope.get("type") == "http" and (_header(scope, b"host") or b"").lower() not in allowed:
            await _refuse(send, 421, "this server answers its own address only")
            return
        await app(scope, receive, send)

    return guarded


def json_body_guard(app: ASGIApp) -> ASGIApp:
    """A POST whose body is not `application/json` is refused (415): the only bodies a web page
    may send another origin without asking first (text/plain, forms) never reach the app."""

    async def guarded(scope: dict[str, Any], receive: Callable[[], Awaitable[Any]],
                      send: Callable[[Any], Awaitable[None]]) -> None:
        if scope.get("type") == "http" and scope.get("method") == "POST":
            kind = (_header(scope, b"content-type") or b"").split(b";")[0].strip().lower()
            if kind != b"application/json":
                await _refuse(send, 415, "the body must be application/json")
                return
        await app(scope, receive, send)

    return guarded


def guarded_app(app: ASGIApp, door: Door, public: Iterable[str] = (), json_only: bool = False) -> ASGIApp:
    """`app` behind the door: Host (loopback), then Origin, then the bearer token, then (with
    `json_only`) the body's type."""
    inner = json_body_guard(app) if json_only else app
    return loopback_host_guard(origin_guard(bearer_guard(inner, door, public), door), door)
