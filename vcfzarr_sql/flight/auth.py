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
import hmac
import secrets
import threading

import pyarrow.flight as flight

__all__ = ["HandshakeAccepted", "PasswordAuth", "user_of"]


class HandshakeAccepted(flight.ServerAuthHandler):
    """Lets the ``Handshake`` call through (Flight answers it only when a handler is set);
    :class:`PasswordAuth` checks its headers, as every other call's."""

    def authenticate(self, outgoing: object, incoming: object) -> None:
        return None

    def is_valid(self, token: bytes) -> str:
        return ""


class _Authenticated(flight.ServerMiddleware):
    """The user a call runs as; on a Basic login, it sends the bearer token back."""

    def __init__(self, user: str, token: str | None = None):
        self.user = user
        self._token = token

    def sending_headers(self) -> dict[str, str]:
        return {"authorization": f"Bearer {self._token}"} if self._token else {}


class PasswordAuth(flight.ServerMiddlewareFactory):
    """Checks every call's ``authorization`` header against ``password`` (None: no check).

    Tokens live as long as the server; each Basic login gets a new one.
    """

    def __init__(self, password: str | None):
        super().__init__()
        self._password = password
        self._tokens: dict[str, str] = {}
        self._lock = threading.Lock()

    def start_call(self, info: object, headers: dict[str, list[str]]) -> _Authenticated:
        given = next(iter(headers.get("authorization", [])), "")
        scheme, _, credential = given.partition(" ")
        if scheme.lower() == "bearer":
            with self._lock:
                user = self._tokens.get(credential)
            if user is not None:
                return _Authenticated(user)
        elif scheme.lower() == "basic":
            user, _, password = base64.b64decode(credential).decode().partition(":")
            if self._password is None or hmac.compare_digest(password.encode(), self._password.encode()):
                token = secrets.token_urlsafe(32)
                with self._lock:
                    self._tokens[token] = user
                return _Authenticated(user, token)
            raise flight.FlightUnauthenticatedError(f'password authentication failed for user "{user}"')
        if self._password is None:
            return _Authenticated("")
        raise flight.FlightUnauthenticatedError("authentication required: send a user and password")


def user_of(context: flight.ServerCallContext) -> str:
    """The user the call was authenticated as ("" without authentication)."""
    middleware = context.get_middleware("auth")
    return middleware.user if middleware is not None else ""
