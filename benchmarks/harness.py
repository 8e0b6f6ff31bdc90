"""Timing harness: every tool of a task run side by side, interleaved, median of N, answers checked.

A :class:`Case` is one tool doing one task. :func:`measure` first runs each case's ``check`` once
and compares its answer with the task's expected answer (a tool that answers differently gets
no time), then runs the ``run`` of every case ``repeats`` times, rotating the order each round
so that machine noise hits every tool alike (a case slower than ``SLOW_S`` is timed once). A case whose tool is missing raises
:class:`Unavailable` and is reported as "not available: <why>", never timed.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import Any

import numpy as np

#: Label of our rows; every ratio is "tool time / our time".
OURS = "vcfzarr-sql"
#: A case whose checked run takes longer than this is timed once instead of ``repeats`` times.
SLOW_S = 30.0


class Unavailable(Exception):
    """The tool (or a piece of ours) is not there; the message says why."""


@dataclasses.dataclass
class Case:
    """One tool doing one task.

    ``run`` does the timed work and returns its answer (or None when it cannot cheaply give
    one, e.g. output sent to /dev/null); ``check`` (default: ``run``) gives the answer checked
    once before timing. ``setup`` runs once, untimed, before anything else.
    """

    tool: str
    run: Callable[[], Any]
    check: Callable[[], Any] | None = None
    setup: Callable[[], None] | None = None
    note: str = ""


@dataclasses.dataclass
class Measurement:
    """What :func:`measure` found for one case."""

    task: str
    tool: str
    status: str  # "ok", "not available: ...", "wrong answer: ...", "failed: ..."
    times: list[float] = dataclasses.field(default_factory=list)
    answer: Any = None
    note: str = ""
    extra: dict[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def median(self) -> float | None:
        return statistics.median(self.times) if self.times else None


def same_answer(got: Any, expected: Any) -> bool:
    """Equal answers: exact for ints and strings, element-wise for arrays and tuples."""
    if isinstance(expected, np.ndarray) or isinstance(got, np.ndarray):
        return np.array_equal(np.asarray(got), np.asarray(expected))
    if isinstance(expected, (tuple, list)) and isinstance(got, (tuple, list)):
        return len(got) == len(expected) and all(same_answer(g, e) for g, e in zip(got, expected))
    if isinstance(expected, dict) and isinstance(got, dict):
        return got.keys() == expected.keys() and all(same_answer(got[k], expected[k]) for k in expected)
    return got == expected


def describe(answer: Any, limit: int = 80) -> str:
    text = repr(answer.tolist() if isinstance(answer, np.ndarray) else answer)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def failure(err: Exception) -> str:
    lines = str(err).strip().splitlines()
    return f"failed: {type(err).__name__}: {lines[0] if lines else ''}"[:200]


def measure(task: str, cases: Sequence[Case], expected: Any, repeats: int, skip: Collection[str] = ()) -> list[Measurement]:
    """Check then time every case of ``task``; see the module docstring.

    ``skip`` entries are tool names, or ``tool:word`` to skip that tool only in tasks naming ``word``.
    """
    results = {case.tool: Measurement(task, case.tool, "ok", note=case.note) for case in cases}
    live: list[Case] = []
    rounds_left: dict[str, int] = {}
    for case in cases:
        result = results[case.tool]
        if any(entry == case.tool or entry.startswith(f"{case.tool}:") and entry.split(":", 1)[1] in task for entry in skip):
            result.status = "not run: skipped on the command line (--skip, time budget)"
            continue
        try:
            if case.setup is not None:
                case.setup()
            start = time.perf_counter()
            answer = (case.check or case.run)()
            elapsed = time.perf_counter() - start
        except Unavailable as err:
            result.status = f"not available: {err}"
            continue
        except Exception as err:  # noqa: BLE001 - a failing tool is a result, not a crash
            result.status = failure(err)
            continue
        result.answer = answer
        if not same_answer(answer, expected):
            result.status = f"wrong answer: {describe(answer)} (expected {describe(expected)})"
            continue
        live.append(case)
        if elapsed > SLOW_S:
            # Slow: timed once; when the checked run was the timed function itself, that run counts.
            rounds_left[case.tool] = 0 if case.check is None else 1
            if case.check is None:
                result.times.append(elapsed)
    for round_ in range(repeats):
        shift = round_ % max(len(live), 1)
        for case in live[shift:] + live[:shift]:
            result = results[case.tool]
            if not result.ok or rounds_left.get(case.tool, repeats) <= 0:
                continue
            rounds_left[case.tool] = rounds_left.get(case.tool, repeats) - 1
            start = time.perf_counter()
            try:
                answer = case.run()
            except Exception as err:  # noqa: BLE001
                result.status = failure(err)
                continue
            elapsed = time.perf_counter() - start
            if answer is not None and not same_answer(answer, expected):
                result.status = f"wrong answer on repeat: {describe(answer)}"
            result.times.append(elapsed)
    for result in results.values():
        if not result.ok:
            result.times.clear()
    print_progress(task, list(results.values()))
    return list(results.values())


def print_progress(task: str, results: Sequence[Measurement]) -> None:
    parts = [f"{r.tool}={r.median:.3f}s" if r.ok else f"{r.tool}: {r.status}" for r in results]
    print(f"[{task}] " + "; ".join(parts), file=sys.stderr, flush=True)


@dataclasses.dataclass
class ProcessResult:
    """One finished subprocess: wall time, peak RSS (largest process in its tree) and output."""

    wall_s: float
    max_rss_bytes: int
    stdout: bytes
    cpu_s: float = 0.0  # user + system time of the process and the children it waited for


def run_process(argv: Sequence[str], *, capture: bool = True, env: dict[str, str] | None = None) -> ProcessResult:
    """Run ``argv`` to completion; stdout to a temporary file (or /dev/null), stderr kept for errors.

    Peak memory is ``ru_maxrss`` from ``wait4``: on Linux the largest resident set of the
    process and of any descendant it waited for (not the sum over concurrent workers).
    """
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(
            list(argv), stdout=out if capture else subprocess.DEVNULL, stderr=err, env=env
        )
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            err.seek(0)
            message = err.read().decode(errors="replace").strip().splitlines()
            raise RuntimeError(f"{Path(argv[0]).name} exited {proc.returncode}: {message[-1] if message else ''}")
        out.seek(0)
        return ProcessResult(wall, usage.ru_maxrss * 1024, out.read() if capture else b"",
                             usage.ru_utime + usage.ru_stime)


def shell(script: str) -> list[str]:
    """argv running ``script`` in bash with pipefail (for tool pipelines such as bcftools | bcftools)."""
    return ["bash", "-o", "pipefail", "-c", script]


def suite_arguments(description: str, argv: list[str] | None) -> argparse.Namespace:
    """``--size`` and ``--skip TOOL`` (repeatable), the options every suite takes."""
    from benchmarks.sizes import SIZES

    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--size", choices=SIZES, default="quick")
    parser.add_argument("--skip", action="append", default=[], metavar="TOOL", help="TOOL or TOOL:WORD (only tasks containing WORD) not to run; reported as not run")
    return parser.parse_args(argv)


def venv_bin(name: str) -> str:
    """Path of an executable installed next to this interpreter (vcf2zarr, vcztools, vcfzarr-sql)."""
    path = Path(sys.executable).parent / name
    if not path.exists():
        raise Unavailable(f"{name} is not installed in {path.parent}")
    return str(path)


def directory_size(path: Path) -> int:
    """Bytes of all files under ``path`` (or of the file ``path``)."""
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
