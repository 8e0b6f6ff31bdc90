"""How fast a server starts sessions' processes (and Flight SQL's server its statements'
worker processes): a token bucket per client address and one for all, so that connections
that each send one byte cannot keep the server forking (a start costs the server some 12 ms
of CPU).

A bucket holds up to ``burst`` starts and refills at ``rate`` starts a second; a start takes
one from its address's bucket and from the server's. IPv6 addresses count by their /64 prefix
(one host's usual share). An address's bucket is forgotten once full again, so the table holds
only addresses that started something in the last ``burst / rate`` seconds, a number the
server's own bucket bounds.

>>> clock = [0.0]
>>> starts = StartRate(per_address=(2, 1.0), overall=(3, 1.0), clock=lambda: clock[0])
>>> [starts.refusal("10.0.0.9") is None for _ in range(2)]
[True, True]
>>> print(starts.refusal("10.0.0.9"))
too many connections from your address in a short time (2 at once, then 1 a second): try again shortly
>>> starts.refusal("10.0.0.8") is None, starts.refusal("10.0.0.7") is None
(True, False)
>>> clock[0] = 1.0
>>> starts.refusal("10.0.0.9") is None
True
>>> address_key("2001:db8::1") == address_key("2001:db8::ffff:2"), address_key("10.0.0.9")
(True, '10.0.0.9')
"""

from __future__ import annotations

import ipaddress
import threading
import time
from collections.abc import Callable

#: Past this many addresses, the table drops the buckets that are full again.
_PRUNE_AT = 64


def address_key(address: str) -> str:
    """The key an address's starts count under: an IPv4 address itself, an IPv6 one's /64
    (an IPv4-mapped IPv6 address as its IPv4 address)."""
    try:
        ip = ipaddress.ip_address(address.split("%")[0])
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network((ip, 64), strict=False))
    return str(ip)


class _Bucket:
    """Up to ``burst`` tokens, refilled at ``rate`` a second."""

    __slots__ = ("tokens", "at")

    def __init__(self, burst: float, now: float):
        self.tokens = burst
        self.at = now

    def fill(self, burst: float, rate: float, now: float) -> float:
        self.tokens = min(burst, self.tokens + (now - self.at) * rate)
        self.at = now
        return self.tokens


class StartRate:
    """Whether a client address may have a session's process started now (see the module).

    ``per_address`` and ``overall``: (burst, starts per second); a rate of 0 means no limit.
    ``what``: what a refusal says there were too many of.
    """

    def __init__(self, per_address: tuple[float, float], overall: tuple[float, float],
                 clock: Callable[[], float] = time.monotonic, *, what: str = "connections"):
        self._what = what
        self._per_address = per_address
        self._overall = overall
        self._clock = clock
        self._lock = threading.Lock()
        self._all = _Bucket(overall[0], clock())
        self._addresses: dict[str, _Bucket] = {}

    def refusal(self, address: str) -> str | None:
        """None, and a start counted, when ``address`` may start a session's process now;
        else why not (for the client)."""
        (burst, rate), (all_burst, all_rate) = self._per_address, self._overall
        key = address_key(address)
        with self._lock:
            now = self._clock()
            bucket = self._addresses.get(key)
            if rate and bucket is None:
                if len(self._addresses) >= _PRUNE_AT:
                    self._prune(now)
                bucket = self._addresses[key] = _Bucket(burst, now)
            if bucket is not None and bucket.fill(burst, rate, now) < 1:
                return self._refused("from your address", burst, rate)
            if all_rate and self._all.fill(all_burst, all_rate, now) < 1:
                return self._refused("to the server", all_burst, all_rate)
            if bucket is not None:
                bucket.tokens -= 1
            if all_rate:
                self._all.tokens -= 1
            return None

    def _refused(self, whence: str, burst: float, rate: float) -> str:
        return (f"too many {self._what} {whence} in a short time ({burst:g} at once, then {rate:g} "
                "a second): try again shortly")

    def _prune(self, now: float) -> None:
        burst, rate = self._per_address
        for key in [key for key, bucket in self._addresses.items()
                    if bucket.fill(burst, rate, now) >= burst]:
            del self._addresses[key]
