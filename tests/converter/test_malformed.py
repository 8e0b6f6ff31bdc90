"""Every malformed corpus file, through ``vcfzarr-sql convert``, ends one of two ways:

- exit 0 and a store that matches bcftools in every aspect (the checks of test_corpus_convert),
  which needs bcftools (the oracle) to read the file; or
- exit 1, exactly one line on stderr, ``error: <the file path>: ...``, no traceback, and nothing
  left behind: neither OUTPUT nor a temporary directory beside it.

Every file goes through the CLI's ``main()`` in the test's process (its stderr and that of the
converter's worker processes read at the file descriptor), and one file of each kind (cyvcf2
parses it, fails on it, crashes on it) through a ``python -m vcfzarr_sql convert`` process of
its own: a process per file cost a second of CPU each for the interpreter and imports.

Some of these files crash cyvcf2 (segfault): the CLI must survive them (the converter parses in a
child process).
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import warnings
from collections.abc import Iterator

import oracle
import pytest
import store_check
from corpus import CorpusFile, malformed_files

from vcfzarr_sql.cli import main

#: Longer than any honest conversion of these small files; a hang is a failure.
TIMEOUT_S = 120
FILES = malformed_files()
#: one file of each way cyvcf2 (MALFORMED.tsv) takes them: parsed, failed on, crashed on
KINDS = {kind: next(f for f in FILES if f.parses_cyvcf2 == kind) for kind in ("ok", "FAIL", "SEGFAULT")}


def _bcftools_reads(vcf) -> bool:
    try:
        oracle.records(vcf)
        oracle.calls(vcf, tuple(oracle.header(vcf).format))
    except oracle.BcftoolsError:
        return False
    return True


def _assert_exact_or_clean(vcf: CorpusFile, tmp_path, returncode: int, stderr: str) -> None:
    assert "Traceback" not in stderr, stderr
    if returncode == 0:
        assert _bcftools_reads(vcf.path), (
            f"converted a file bcftools rejects (MALFORMED.tsv: {vcf.parses_bcftools})"
        )
        stored = store_check.Stored(tmp_path / "out.vcz")
        failures = {aspect: check(stored, vcf.path) for aspect, check in store_check.CHECKS.items()}
        failures = {aspect: m for aspect, m in failures.items() if m}
        assert not failures, "\n".join(
            f"{aspect}:\n{store_check.report(m)}" for aspect, m in failures.items()
        )
    else:
        assert returncode == 1, (returncode, stderr)
        lines = stderr.splitlines()
        assert len(lines) == 1, stderr
        assert re.match(f"^error: {re.escape(str(vcf.path))}: ", lines[0]), lines[0]
        assert list(tmp_path.iterdir()) == [], "OUTPUT or a temporary directory left behind"


def _timed_out(signum, frame):
    raise TimeoutError(f"convert took over {TIMEOUT_S} s")


@contextlib.contextmanager
def _deadline(seconds: int) -> Iterator[None]:
    """A hang is a failure: SIGALRM raises TimeoutError in the test after ``seconds``."""
    previous = signal.signal(signal.SIGALRM, _timed_out)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@pytest.mark.parametrize("vcf", FILES, ids=lambda f: f.id)
def test_converts_exactly_or_fails_cleanly(vcf, tmp_path, capfd, monkeypatch):
    monkeypatch.setenv("PYTHONWARNINGS", "ignore")  # for the worker processes, as for the CLI's
    capfd.readouterr()
    with _deadline(TIMEOUT_S), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        returncode = main(["convert", str(vcf.path), str(tmp_path / "out.vcz")])
    _assert_exact_or_clean(vcf, tmp_path, returncode, capfd.readouterr().err)


@pytest.mark.parametrize("vcf", list(KINDS.values()), ids=list(KINDS))
def test_the_cli_process_converts_exactly_or_fails_cleanly(vcf, tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "vcfzarr_sql", "convert", str(vcf.path), str(tmp_path / "out.vcz")],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )
    _assert_exact_or_clean(vcf, tmp_path, result.returncode, result.stderr)
