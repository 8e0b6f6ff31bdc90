"""How a server may be reached: its limits, TLS, password, and the rule for exposed addresses.

Protocol-neutral: the PostgreSQL server uses it, and any other server can.

>>> check_exposure("127.0.0.1", tls=False, password=False, insecure=False)
>>> check_exposure("0.0.0.0", tls=True, password=False, insecure=False)
Traceback (most recent call last):
...
vcfzarr_sql.serve.pg.config.ServerConfigError: --host 0.0.0.0 is reachable from other machines: serve it with --tls-cert/--tls-key and a password (--password-file or $VCFZARR_SQL_PASSWORD), or say --insecure
"""

from __future__ import annotations

import ipaddress
import socket
import ssl
from dataclasses import dataclass, field

from vcfzarr_sql.errors import VcfZarrError
from vcfzarr_sql.serve.pg.auth import PASSWORD_ENV, LoginThrottle, ScramSecret


class ServerConfigError(VcfZarrError):
    """A server cannot start as asked (unsafe address, unreadable certificate...)."""


@dataclass(frozen=True)
class Limits:
    """What one client may take. Times in seconds (0: no limit), sizes in bytes."""

    #: A startup packet (PostgreSQL's own limit: 10,000 bytes).
    max_startup_packet: int = 10_000
    #: Any later message (a query text, a Bind with its parameters).
    max_message: int = 64 << 20
    #: From connecting to being logged in (TLS handshake and password included).
    auth_timeout: float = 15.0
    #: Clients logged in at once (more are refused with "too many clients").
    max_connections: int = 32
    #: Connections not yet logged in, in all and from one address; past either, a new
    #: connection ends the oldest such connection (of that address, first).
    max_logins: int = 16
    max_logins_per_address: int = 8
    #: Sessions' processes started, from one address (IPv6: one /64) and in all, as (burst,
    #: starts a second); a connection past either is refused (FATAL 53300) with no process
    #: started (a start costs the server ~12 ms of CPU; rate 0: no limit).
    starts_per_address: tuple[float, float] = (40, 10.0)
    starts: tuple[float, float] = (100, 40.0)
    #: A logged-in client that sends nothing for this long is disconnected.
    idle_timeout: float = 3600.0
    #: A statement running (or sending its rows) longer than this is cancelled.
    statement_timeout: float = 3600.0
    #: Rows of an open cursor read into the server's memory so another statement can run.
    max_held_rows_bytes: int = 256 << 20
    #: Bytes the whole server process may take (0: no cap; see :mod:`~vcfzarr_sql.serve.memory`).
    max_memory: int = 0


def tls_context(cert: str, key: str) -> ssl.SSLContext:
    """A server TLS context (TLS 1.2 or newer) from PEM certificate and key files."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        context.load_cert_chain(cert, key)
    except (OSError, ssl.SSLError) as err:
        raise ServerConfigError(f"{cert}, {key}: cannot load the TLS certificate and key ({err})") from None
    return context


def is_loopback(host: str) -> bool:
    """Whether every address ``host`` names is a loopback address.

    >>> is_loopback("127.0.0.1"), is_loopback("::1"), is_loopback("0.0.0.0"), is_loopback("")
    (True, True, False, False)
    """
    if not host:
        return False
    try:
        infos = socket.getaddrinfo(host, None)
    except (OSError, UnicodeError):
        return False
    return all(ipaddress.ip_address(str(info[4][0]).split("%")[0]).is_loopback for info in infos)


def check_exposure(host: str, *, tls: bool, password: bool, insecure: bool) -> None:
    """Refuse to listen on an address other machines reach without TLS and a password,
    unless the user says ``insecure``."""
    if insecure or is_loopback(host) or (tls and password):
        return
    raise ServerConfigError(
        f"--host {host} is reachable from other machines: serve it with --tls-cert/--tls-key "
        f"and a password (--password-file or ${PASSWORD_ENV}), or say --insecure"
    )


@dataclass
class Security:
    """TLS (required from every client when set), the password's SCRAM secret (None: no
    password) and the throttle of failed logins. ``tls_files``: the certificate and key files
    ``tls`` was made of (a session in a process of its own makes its context from them)."""

    tls: ssl.SSLContext | None = None
    secret: ScramSecret | None = None
    throttle: LoginThrottle = field(default_factory=LoginThrottle)
    tls_files: tuple[str, str] | None = None

    @classmethod
    def of(cls, *, password: str | None = None, tls_cert: str | None = None,
           tls_key: str | None = None) -> Security:
        if (tls_cert is None) != (tls_key is None):
            raise ServerConfigError("TLS needs both --tls-cert and --tls-key")
        files = None if tls_cert is None or tls_key is None else (tls_cert, tls_key)
        return cls(
            tls=None if files is None else tls_context(*files),
            secret=None if password is None else ScramSecret.from_password(password),
            tls_files=files,
        )
