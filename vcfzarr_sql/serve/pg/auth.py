"""Password authentication: SCRAM-SHA-256 (RFC 5802/7677, PostgreSQL's default), the password's
source, and slowing down guessing.

The server keeps only SCRAM's stored and server keys (:class:`ScramSecret`), never sends or
receives the password, and proves to the client that it knows the secret too.
:class:`ScramExchange` is the server's side of one exchange, as pure steps over the messages:

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

import base64
import hashlib
import hmac
import logging
import os
import secrets
import stringprep
import threading
import time
import unicodedata
from dataclasses import dataclass, field

from vcfzarr_sql.errors import VcfZarrError

log = logging.getLogger("vcfzarr_sql.serve.pg")

MECHANISM = "SCRAM-SHA-256"
#: The environment variable a server reads its password from (when no file is given).
PASSWORD_ENV = "VCFZARR_SQL_PASSWORD"
_ITERATIONS = 4096  # PostgreSQL's scram_iterations default


class AuthenticationFailed(VcfZarrError):
    """A client's SCRAM messages are malformed or its proof is wrong."""


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
        password = (os.environ if environ is None else environ).get(PASSWORD_ENV)
        if password is None:
            return None
        where = f"${PASSWORD_ENV}"
    if not password:
        raise VcfZarrError(f"{where}: the password is empty")
    return password


def saslprep(password: str) -> str:
    """The password as SCRAM hashes it (RFC 4013 SASLprep); like libpq, the password itself
    when it has characters SASLprep prohibits.

    >>> saslprep("I\\u00adX"), saslprep("\\u2168"), saslprep("a\\x07b")
    ('IX', 'IX', 'a\\x07b')
    """
    mapped = "".join(
        " " if stringprep.in_table_c12(c) else c for c in password if not stringprep.in_table_b1(c)
    )
    normal = unicodedata.normalize("NFKC", mapped)
    prohibited = (
        stringprep.in_table_c12, stringprep.in_table_c21, stringprep.in_table_c22,
        stringprep.in_table_c3, stringprep.in_table_c4, stringprep.in_table_c5,
        stringprep.in_table_c6, stringprep.in_table_c7, stringprep.in_table_c8,
        stringprep.in_table_c9, stringprep.in_table_a1,
    )
    if any(check(c) for c in normal for check in prohibited):
        return password
    if any(stringprep.in_table_d1(c) for c in normal) and (
        any(stringprep.in_table_d2(c) for c in normal)
        or not (stringprep.in_table_d1(normal[0]) and stringprep.in_table_d1(normal[-1]))
    ):
        return password
    return normal


def _hmac(key: bytes, message: bytes) -> bytes:
    return hmac.digest(key, message, "sha256")


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
        salt = secrets.token_bytes(16) if salt is None else salt
        salted = hashlib.pbkdf2_hmac("sha256", saslprep(password).encode(), salt, iterations)
        client_key = _hmac(salted, b"Client Key")
        return cls(salt, iterations, hashlib.sha256(client_key).digest(), _hmac(salted, b"Server Key"))


def _attributes(message: str) -> dict[str, str]:
    out = {}
    for part in message.split(","):
        name, sep, value = part.partition("=")
        if not sep or len(name) != 1:
            raise AuthenticationFailed(f"malformed SCRAM message attribute {part[:20]!r}")
        out[name] = value
    return out


@dataclass
class ScramExchange:
    """The server's side of one SCRAM-SHA-256 exchange (no channel binding)."""

    secret: ScramSecret
    server_nonce: str = field(default_factory=lambda: base64.b64encode(secrets.token_bytes(18)).decode())
    _client_first_bare: str = ""
    _server_first: str = ""
    _nonce: str = ""

    def server_first(self, client_first: str) -> str:
        """The answer to the client's first message (``n,,n=user,r=nonce``)."""
        header, sep, bare = client_first.partition(",")
        authzid, sep2, bare = bare.partition(",")
        if not (sep and sep2) or header not in ("n", "y") or authzid:
            raise AuthenticationFailed("unsupported SCRAM channel binding or authorization identity")
        nonce = _attributes(bare).get("r")
        if not nonce:
            raise AuthenticationFailed("SCRAM client nonce missing")
        self._client_first_bare = bare
        self._nonce = nonce + self.server_nonce
        salt = base64.b64encode(self.secret.salt).decode()
        self._server_first = f"r={self._nonce},s={salt},i={self.secret.iterations}"
        return self._server_first

    def server_final(self, client_final: str) -> str:
        """The server's proof (``v=...``) when the client's proof is right; else
        :class:`AuthenticationFailed`."""
        without_proof, sep, proof_attribute = client_final.rpartition(",p=")
        if not sep or not self._nonce:
            raise AuthenticationFailed("malformed SCRAM final message")
        attributes = _attributes(without_proof)
        if attributes.get("r") != self._nonce or attributes.get("c") not in ("biws", "eSws"):
            raise AuthenticationFailed("SCRAM nonce or channel binding mismatch")
        try:
            proof = base64.b64decode(proof_attribute, validate=True)
        except ValueError:
            raise AuthenticationFailed("malformed SCRAM proof") from None
        message = f"{self._client_first_bare},{self._server_first},{without_proof}".encode()
        signature = _hmac(self.secret.stored_key, message)
        if len(proof) != len(signature):
            raise AuthenticationFailed("malformed SCRAM proof")
        client_key = bytes(a ^ b for a, b in zip(proof, signature))
        if not hmac.compare_digest(hashlib.sha256(client_key).digest(), self.secret.stored_key):
            raise AuthenticationFailed("wrong password")
        return "v=" + base64.b64encode(_hmac(self.secret.server_key, message)).decode()


class LoginThrottle:
    """Slows password guessing: after a failed login, the next attempt from the same host
    waits ``base_delay`` seconds, doubling with each further failure up to ``max_delay``;
    attempts from one host queue one after another. A success clears the host's record.

    >>> throttle = LoginThrottle(base_delay=0.5, max_delay=4)
    >>> throttle.failed("10.0.0.9"); throttle.failed("10.0.0.9")
    >>> throttle.delay("10.0.0.9"), throttle.delay("10.0.0.1")
    (1.0, 0.0)
    """

    def __init__(self, base_delay: float = 0.5, max_delay: float = 8.0):
        self.base_delay = base_delay
        self.max_delay = max_delay
        self._lock = threading.Lock()
        self._failures: dict[str, int] = {}
        self._next_attempt: dict[str, float] = {}

    def delay(self, host: str) -> float:
        """Seconds between attempts from ``host`` after its failures so far."""
        failures = self._failures.get(host, 0)
        return 0.0 if not failures else min(self.base_delay * 2 ** (failures - 1), self.max_delay)

    def wait(self, host: str, deadline: float | None = None) -> bool:
        """Block until ``host`` may try a password; False at once (and nothing booked) when
        that is after ``deadline`` (``time.monotonic()``: a login past its auth timeout must
        not hold a connection slot while it waits)."""
        with self._lock:
            now = time.monotonic()
            start = max(now, self._next_attempt.get(host, now))
            if deadline is not None and start > deadline:
                return False
            self._next_attempt[host] = start + self.delay(host)
        time.sleep(start - now)
        return True

    def failed(self, host: str) -> None:
        with self._lock:
            self._failures[host] = self._failures.get(host, 0) + 1
            if len(self._failures) > 100_000:  # bounded memory under a spray of hosts
                self._failures.clear()
                self._next_attempt.clear()
            self._next_attempt[host] = time.monotonic() + self.delay(host)

    def succeeded(self, host: str) -> None:
        with self._lock:
            self._failures.pop(host, None)
            self._next_attempt.pop(host, None)
