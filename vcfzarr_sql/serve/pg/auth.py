"""Password authentication: SCRAM-SHA-256 (RFC 5802/7677, PostgreSQL's default) through
``scramp`` (the maintained implementation pg8000 uses; the ``serve`` extra), the password's
source, and slowing down guessing.

The server keeps only SCRAM's stored and server keys (:class:`ScramSecret`), never sends or
receives the password, and proves to the client that it knows the secret too.
:class:`ScramExchange` is the server's side of one exchange, as steps over the messages:

>>> import base64
>>> salt = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")     # RFC 7677's example exchange
>>> exchange = ScramExchange(ScramSecret.from_password("pencil", salt=salt),
...                          server_nonce="%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0")
>>> exchange.server_first("n,,n=user,r=rOprNGfwEbeRWgbNEkqO")
'r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096'
>>> exchange.server_final("c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
...                       "p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
'v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4='
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from vcfzarr_sql.errors import VcfZarrError
from vcfzarr_sql.serve.pg.start_rate import address_key

log = logging.getLogger("vcfzarr_sql.serve.pg")

MECHANISM = "SCRAM-SHA-256"
#: The environment variable a server reads its password from (when no file is given).
PASSWORD_ENV = "VCFZARR_SQL_PASSWORD"
_ITERATIONS = 4096  # PostgreSQL's scram_iterations default
#: The user name scramp is shown when a client sends none: PostgreSQL clients send ``n=``
#: (the user is in the startup message; the server ignores SCRAM's), which scramp refuses.
_ANY_USER = "*"


class AuthenticationFailed(VcfZarrError):
    """A client's SCRAM messages are malformed or its proof is wrong."""


def _scramp() -> ModuleType:
    """The ``scramp`` module, imported when a password is configured (an optional extra)."""
    try:
        import scramp
    except ImportError:
        raise VcfZarrError(
            "a server password needs scramp (SCRAM-SHA-256): pip install 'vcfzarr-sql[serve]'"
        ) from None
    return scramp


def read_password(path: str | None, environ: dict[str, str] | None = None) -> str | None:
    """The server password: the first line of the file ``path``, else ``$VCFZARR_SQL_PASSWORD``,
    else None (no password). An empty password is an error, not "no password"."""
    if path is not None:
        try:
            with open(path, encoding="utf-8") as f:
                password = f.readline().rstrip("\r\n")
        except (OSError, UnicodeDecodeError) as err:
            raise VcfZarrError(f"{path}: cannot read the password file ({err})") from None
        where = path
    else:
        given = (os.environ if environ is None else environ).get(PASSWORD_ENV)
        if given is None:
            return None
        password, where = given, f"${PASSWORD_ENV}"
    if not password:
        raise VcfZarrError(f"{where}: the password is empty")
    return password


@dataclass(frozen=True)
class ScramSecret:
    """What the server keeps of a password (as ``pg_authid`` does for SCRAM)."""

    salt: bytes
    iterations: int
    stored_key: bytes
    server_key: bytes

    @classmethod
    def from_password(cls, password: str, *, salt: bytes | None = None,
                      iterations: int = _ITERATIONS) -> ScramSecret:
        """The secret of ``password`` (SASLprep'd, RFC 4013); a random salt unless given.

        A password SASLprep prohibits (control characters, unassigned code points...) is
        refused here, where libpq would hash it unprepared: choose another."""
        scramp = _scramp()
        try:
            salt, stored_key, server_key, iterations = scramp.ScramMechanism(MECHANISM).make_auth_info(
                password, iteration_count=iterations, salt=salt)
        except scramp.ScramException as err:
            raise VcfZarrError(f"the server password cannot be used for SCRAM: {err}") from None
        return cls(salt, iterations, stored_key, server_key)

    def auth_info(self, user: str) -> tuple[bytes, bytes, bytes, int]:
        """The secret as scramp asks for it (one password for every user)."""
        return self.salt, self.stored_key, self.server_key, self.iterations


class ScramExchange:
    """The server's side of one SCRAM-SHA-256 exchange (no channel binding): scramp's
    ``ScramServer``, with its errors as :class:`AuthenticationFailed`."""

    def __init__(self, secret: ScramSecret, server_nonce: str | None = None):
        self._scramp = _scramp()
        self._server: Any = self._scramp.ScramMechanism(MECHANISM).make_server(
            secret.auth_info, s_nonce=server_nonce)

    def server_first(self, client_first: str) -> str:
        """The answer to the client's first message (``n,,n=user,r=nonce``)."""
        header, sep, bare = client_first.partition(",")
        authzid, sep2, bare = bare.partition(",")
        named = bare.replace("n=,", f"n={_ANY_USER},", 1) if bare.startswith("n=,") else bare
        with self._failing():
            self._server.set_client_first(f"{header}{sep}{authzid}{sep2}{named}")
            # the client's proof signs the message as it sent it, without the stand-in name
            self._server.client_first_bare = bare
            return str(self._server.get_server_first())

    def server_final(self, client_final: str) -> str:
        """The server's proof (``v=...``) when the client's proof is right; else
        :class:`AuthenticationFailed`."""
        with self._failing():
            self._server.set_client_final(client_final)
            return str(self._server.get_server_final())

    @contextmanager
    def _failing(self) -> Iterator[None]:
        """scramp's ``ScramException`` as :class:`AuthenticationFailed` (one line)."""
        try:
            yield
        except self._scramp.ScramException as err:
            proof = getattr(getattr(err, "server_error", None), "value", None) == "invalid-proof"
            raise AuthenticationFailed("wrong password" if proof else f"malformed SCRAM message: {err}") \
                from None


class LoginThrottle:
    """Slows password guessing: after a failed login, the next attempt from the same host
    waits ``base_delay`` seconds, doubling with each further failure up to ``max_delay``;
    attempts from one host queue one after another. A success does not clear the host's
    record (a guesser would log in now and then to start again at no delay): the record is
    forgotten ``forget_after`` seconds after its last failure. A host is an address as
    :func:`~.start_rate.address_key` counts it (IPv6: its /64, which one client can rotate
    through).

    >>> throttle = LoginThrottle(base_delay=0.5, max_delay=4)
    >>> throttle.failed("10.0.0.9"); throttle.failed("10.0.0.9"); throttle.succeeded("10.0.0.9")
    >>> throttle.delay("10.0.0.9"), throttle.delay("10.0.0.1")
    (1.0, 0.0)
    >>> throttle.failed("2001:db8::1"); throttle.delay("2001:db8::2")
    0.5
    """

    def __init__(self, base_delay: float = 0.5, max_delay: float = 8.0, forget_after: float = 600.0):
        self.base_delay = base_delay
        self.max_delay = max_delay
        self.forget_after = forget_after
        self._last_failure: dict[str, float] = {}
        self._lock = threading.Lock()
        self._failures: dict[str, int] = {}
        self._next_attempt: dict[str, float] = {}

    def delay(self, host: str) -> float:
        """Seconds between attempts from ``host`` after its failures so far."""
        host = address_key(host)
        failures = self._failures.get(host, 0)
        if failures and time.monotonic() - self._last_failure.get(host, 0.0) > self.forget_after:
            failures = 0
        return 0.0 if not failures else min(self.base_delay * 2 ** (failures - 1), self.max_delay)

    def wait(self, host: str, deadline: float | None = None) -> bool:
        """Block until ``host`` may try a password; False at once (and nothing booked) when
        that is after ``deadline`` (``time.monotonic()``: a login past its auth timeout must
        not hold a connection slot while it waits)."""
        host = address_key(host)
        with self._lock:
            now = time.monotonic()
            start = max(now, self._next_attempt.get(host, now))
            if deadline is not None and start > deadline:
                return False
            self._next_attempt[host] = start + self.delay(host)
        time.sleep(start - now)
        return True

    def failed(self, host: str) -> None:
        host = address_key(host)
        with self._lock:
            self._failures[host] = (self._failures.get(host, 0) if self.delay(host) else 0) + 1
            if len(self._failures) > 100_000:  # bounded memory under a spray of hosts
                self._failures.clear()
                self._next_attempt.clear()
                self._last_failure.clear()
            self._last_failure[host] = now = time.monotonic()
            self._next_attempt[host] = now + self.delay(host)

    def succeeded(self, host: str) -> None:
        """A login from ``host`` succeeded: its record stays (see the class)."""
