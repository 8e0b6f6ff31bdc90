"""User/password authentication for Flight SQL, as Flight clients do it (ADBC, the Flight SQL
JDBC driver): the first call (``Handshake``) brings ``authorization: Basic base64(user:pass)``
and gets a bearer token back in the ``authorization`` header; later calls send
``authorization: Bearer <token>``. Without a password configured every call is let in.

>>> factory = PasswordAuth("secret")
>>> basic = "Basic " + base64.b64encode(b"me:secret").decode()
>>> middleware = factory.start_call(None, {"authorization": [basic]})
>>> token = middleware.sending_headers()["authorization"]
>>> factory.start_call(None, {"authorization": [token]}).user
'me'
"""

from __future__ import annotations

import base64
import binascii
import hmac
import logging
import secrets
import threading
import time
import urllib.parse
from collections.abc import Callable

import pyarrow.flight as flight

from vcfzarr_sql.serve.pg.auth import LoginThrottle
from vcfzarr_sql.serve.pg.start_rate import address_key

__all__ = ["HandshakeAccepted", "PasswordAuth", "Tokens", "address_of", "client_of"]

log = logging.getLogger("vcfzarr_sql.serve.flight")

#: A bearer token unused for this long is forgotten (the PostgreSQL server's idle timeout).
TOKEN_IDLE_TIMEOUT = 3600.0
#: Live bearer tokens at most; a new login past it forgets the least recently used one.
MAX_TOKENS = 1000
#: The login throttle's key for every Flight login: Flight middleware is not told the
#: client's address, so Flight logins share one throttle.
_THROTTLE_KEY = "flight-sql"
#: The bearer token a server without password answers a Basic login with (clients expect
#: one; no token is checked, or kept).
_UNCHECKED_TOKEN = "unchecked"


class HandshakeAccepted(flight.ServerAuthHandler):
    """Lets the ``Handshake`` call through (Flight answers it only when a handler is set);
    :class:`PasswordAuth` checks its headers, as every other call's."""

    def authenticate(self, outgoing: object, incoming: object) -> None:
        return None

    def is_valid(self, token: bytes) -> str:
        return ""


class _Authenticated(flight.ServerMiddleware):
    """The user a call runs as and its bearer token ("" without password); ``reply``: the
    token a Basic login gets back."""

    def __init__(self, user: str, token: str = "", *, reply: str = ""):
        self.user = user
        self.token = token
        self._reply = reply

    def sending_headers(self) -> dict[str, str]:
        return {"authorization": f"Bearer {self._reply}"} if self._reply else {}


class Tokens:
    """Bearer tokens and their users, each forgotten after ``idle_timeout`` seconds unused
    (by ``clock``); at most ``limit`` of them (a new one forgets the least recently used).

    >>> tokens = Tokens(idle_timeout=60, limit=1)
    >>> first, second = tokens.issue("ann"), tokens.issue("bob")
    >>> tokens.user(first), tokens.user(second)
    (None, 'bob')
    """

    def __init__(self, idle_timeout: float = TOKEN_IDLE_TIMEOUT, limit: int = MAX_TOKENS,
                 clock: Callable[[], float] = time.monotonic):
        self.idle_timeout = idle_timeout
        self.limit = limit
        self._clock = clock
        self._users: dict[str, tuple[str, float]] = {}  # least recently used first
        self._lock = threading.Lock()

    def issue(self, user: str) -> str:
        """A new token for ``user``."""
        token = secrets.token_urlsafe(32)
        with self._lock:
            self._forget_expired()
            while len(self._users) >= self.limit:
                del self._users[next(iter(self._users))]
            self._users[token] = (user, self._clock())
        return token

    def user(self, token: str) -> str | None:
        """The user of a live ``token`` (None: unknown or expired), which it keeps alive."""
        with self._lock:
            self._forget_expired()
            user, _ = self._users.pop(token, (None, 0.0))
            if user is not None:
                self._users[token] = (user, self._clock())
        return user

    def _forget_expired(self) -> None:
        oldest = self._clock() - self.idle_timeout
        for token, (_, used) in list(self._users.items()):
            if used > oldest:
                break
            del self._users[token]


class PasswordAuth(flight.ServerMiddlewareFactory):
    """Checks every call's ``authorization`` header against ``password`` (None: no check).

    Each Basic login gets a new token (see :class:`Tokens`); failed logins are logged and
    slowed by ``throttle``, as the PostgreSQL server's.
    """

    def __init__(self, password: str | None, throttle: LoginThrottle | None = None,
                 tokens: Tokens | None = None):
        super().__init__()
        self._password = password
        self._throttle = throttle or LoginThrottle()
        self._tokens = tokens or Tokens()

    def start_call(self, info: object, headers: dict[str, list[str]]) -> _Authenticated:
        given = next(iter(headers.get("authorization", [])), "")
        scheme, _, credential = given.partition(" ")
        if self._password is None:
            return _Authenticated("", reply=_UNCHECKED_TOKEN if scheme.lower() == "basic" else "")
        if scheme.lower() == "bearer":
            user = self._tokens.user(credential)
            if user is not None:
                return _Authenticated(user, credential)
        elif scheme.lower() == "basic":
            return self._login(credential)
        raise flight.FlightUnauthenticatedError("authentication required: send a user and password")

    def _login(self, credential: str) -> _Authenticated:
        """A Basic login (``base64(user:password)``): its new token, or Unauthenticated."""
        assert self._password is not None
        self._throttle.wait(_THROTTLE_KEY)
        try:
            user, _, password = basic_credentials(credential)
        except (binascii.Error, UnicodeDecodeError):
            raise self._refused("", "malformed Basic credentials") from None
        if not hmac.compare_digest(password.encode(), self._password.encode()):
            raise self._refused(user, "wrong password")
        self._throttle.succeeded(_THROTTLE_KEY)
        token = self._tokens.issue(user)
        return _Authenticated(user, token, reply=token)

    def _refused(self, user: str, reason: str) -> flight.FlightUnauthenticatedError:
        """The error for a failed login, once it is logged and slows the next one."""
        self._throttle.failed(_THROTTLE_KEY)
        log.warning('failed Flight SQL login for user "%s": %s', user, reason)
        return flight.FlightUnauthenticatedError(f'password authentication failed for user "{user}"')


def basic_credentials(credential: str) -> tuple[str, str, str]:
    """``user:password`` of a Basic credential, base64 with or without its ``=`` padding (the
    ADBC Flight SQL driver 1.13 sends none), split at the first colon. binascii.Error when it
    is not base64 (of any other character, or of an impossible length), UnicodeDecodeError when
    not UTF-8.

    >>> basic_credentials("dTpwdw"), basic_credentials("dTpwdw==")
    (('u', ':', 'pw'), ('u', ':', 'pw'))
    """
    if len(credential) % 4 == 1:
        raise binascii.Error("impossible base64 length")
    padded = credential + "=" * (-len(credential) % 4)
    return base64.b64decode(padded, validate=True).decode().partition(":")


def address_of(peer: str) -> str:
    """The client address of a gRPC peer (``ipv4:ADDRESS:PORT``, ``ipv6:%5BADDRESS%5D:PORT``);
    any other peer (``unix:PATH``) as it is.

    >>> address_of("ipv4:127.0.0.1:50880"), address_of("ipv6:%5B::1%5D:56662")
    ('127.0.0.1', '::1')
    """
    scheme, _, rest = peer.partition(":")
    if scheme not in ("ipv4", "ipv6"):
        return peer
    return urllib.parse.unquote(rest).rpartition(":")[0].strip("[]")


def client_of(context: flight.ServerCallContext) -> str:
    """Who the call counts against: the address it comes from, an IPv6 one by its /64
    (:func:`~vcfzarr_sql.serve.pg.start_rate.address_key`, as the PostgreSQL server's
    per-address limits), whatever user name it logged in with and however many tokens it
    holds: the password is shared and a user name is the client's claim.

    >>> from types import SimpleNamespace
    >>> one = SimpleNamespace(peer=lambda: "ipv6:%5B2001:db8::1%5D:5")
    >>> other = SimpleNamespace(peer=lambda: "ipv6:%5B2001:db8::ffff:2%5D:6")
    >>> client_of(one) == client_of(other), client_of(SimpleNamespace(peer=lambda: "ipv4:10.0.0.9:7"))
    (True, '10.0.0.9')
    """
    return address_key(address_of(context.peer()))
