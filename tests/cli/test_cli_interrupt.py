"""Ctrl-C: ``query`` exits 130 with one line; the shell cancels the statement and carries on
with its tables, and drops a half-typed statement."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import oracle
import pytest

import vcfzarr_sql
from vcfzarr_sql.cli import shell

#: a query that runs far longer than the tests wait (9 records x 10^9 rows)
LONG = "SELECT sum(v.pos * r.range) FROM vcf_zarr('{store}') v, range(1000000000) r"


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> str:
    out = tmp_path_factory.mktemp("interrupt") / "sample.zarr"
    vcfzarr_sql.convert(oracle.CORPUS_SAMPLE, out, show_progress=False)
    return str(out)


def test_query_exits_130_with_one_line_on_ctrl_c(store, tmp_path):
    started = tmp_path / "started.csv"  # (written by the statement before the long one)
    process = subprocess.Popen(
        [sys.executable, "-m", "vcfzarr_sql", "query",
         f"COPY (SELECT 1 AS started) TO '{started}'; " + LONG.format(store=store)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        # a child of a non-interactive shell may inherit SIGINT ignored
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    # imports, then the query runs: wait for its first statement's file, not a fixed time (a
    # loaded machine can outlast one, an idle one wastes it)
    deadline = time.monotonic() + 120
    while not started.exists() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.2)  # (the long statement starts as the COPY ends)
    process.send_signal(signal.SIGINT)
    try:
        out, err = process.communicate(timeout=30)
    finally:
        process.kill()
    # (numcodecs without google_crc32c may print a DeprecationWarning of its own first)
    assert process.returncode == 130 and err.endswith("\nerror: interrupted\n" if "Warning" in err
                                                      else "error: interrupted\n"), err
    assert "Traceback" not in err and out == ""


def _press_ctrl_c_after(seconds: float) -> None:
    threading.Timer(seconds, os.kill, (os.getpid(), signal.SIGINT)).start()


def test_shell_ctrl_c_cancels_the_statement_and_keeps_the_tables(store, capsys):
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signals reach the main thread only")
    session = shell.Session(vcfzarr_sql.connect(), timer=False, mode="csv")
    script = iter([
        f"CREATE TABLE kept AS SELECT pos FROM vcf_zarr('{store}');",
        LONG.format(store=store) + ";",
        "SELECT count(*) AS n FROM kept;",
    ])

    def read_line(pending: bool) -> str | None:
        line = next(script, None)
        if line is not None and line.startswith("SELECT sum"):
            _press_ctrl_c_after(1.0)
        return line

    shell.run_shell(session, read_line, interactive=True)
    out, err = capsys.readouterr()
    assert "interrupted" in err and "Traceback" not in err
    assert out.split() == ["n", str(len(oracle.records(oracle.CORPUS_SAMPLE)))]


def test_shell_ctrl_c_at_a_continuation_prompt_drops_the_statement(capsys, monkeypatch):
    session = shell.Session(vcfzarr_sql.connect(), timer=False, mode="csv")
    typed = iter(["SELECT 'dropped'", KeyboardInterrupt, "SELECT 'kept' AS x;"])

    def fake_input(prompt: str) -> str:
        line = next(typed, EOFError)
        if line is EOFError:  # Ctrl-D
            raise EOFError
        if line is KeyboardInterrupt:
            assert prompt == shell.CONTINUATION
            raise KeyboardInterrupt
        assert isinstance(line, str)
        return line

    monkeypatch.setattr("builtins.input", fake_input)
    shell.run_shell(session, shell.terminal_reader(), interactive=True)
    out, err = capsys.readouterr()
    assert (out.split(), err) == (["^C", "x", "kept"], "")
