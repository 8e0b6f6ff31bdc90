"""For the benchmarks that measure processes: a server of ours in a process of its own, started
from a script that prints its port and serves until its standard input closes; and the CPU time
of a whole process tree (a server's: it, the forkserver and every session's or worker's
process; or the benchmark's own, with Spark's JVM or Ray's workers)."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def served(script: str, *args: str) -> Iterator[tuple[subprocess.Popen[str], int]]:
    """The server ``python -c script *args`` runs (this checkout first on its path) and its
    port; stopped (its standard input closed, then waited for) on leaving."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])}
    server = subprocess.Popen([sys.executable, "-c", script, *args], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True, env=env)
    assert server.stdout is not None and server.stdin is not None
    try:
        yield server, int(server.stdout.readline())
    finally:
        server.stdin.close()
        server.wait(60)


def tree_cpu(pid: int) -> float:
    """CPU seconds of process ``pid``, its children and the children they reaped."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    children.setdefault(int(f.read().rsplit(")", 1)[1].split()[1]), []).append(int(entry))
            except (OSError, IndexError, ValueError):
                continue
    total, todo = 0.0, [pid]
    while todo:
        current = todo.pop()
        todo += children.get(current, [])
        try:
            with open(f"/proc/{current}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += sum(int(value) for value in fields[11:15]) / os.sysconf("SC_CLK_TCK")
    return total
