"""Every malformed corpus file, through ``vcfzarr-sql convert`` in a subprocess, ends one of two ways:

- exit 0 and a store that matches bcftools in every aspect (the checks of test_corpus_convert),
  which needs bcftools (the oracle) to read the file; or
- exit 1, exactly one line on stderr, ``error: <the file path>: ...``, no traceback, and nothing
  left behind: neither OUTPUT nor a temporary directory beside it.

Some of these files crash cyvcf2 (segfault): the CLI must survive them (the converter parses in a
child process).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import oracle
import pytest
import store_check
from corpus import malformed_files

#: Longer than any honest conversion of these small files; a hang is a failure.
TIMEOUT_S = 120


def _convert(vcf, output):
    return subprocess.run(
        [sys.executable, "-m", "vcfzarr_sql", "convert", str(vcf), str(output)],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )


def _bcftools_reads(vcf) -> bool:
    try:
        oracle.records(vcf)
        oracle.calls(vcf, tuple(oracle.header(vcf).format))
    except oracle.BcftoolsError:
        return False
    return True


@pytest.mark.parametrize("vcf", malformed_files(), ids=lambda f: f.id)
def test_converts_exactly_or_fails_cleanly(vcf, tmp_path):
    output = tmp_path / "out.vcz"
    result = _convert(vcf.path, output)
    assert "Traceback" not in result.stderr, result.stderr
    if result.returncode == 0:
        assert _bcftools_reads(vcf.path), (
            f"converted a file bcftools rejects (MALFORMED.tsv: {vcf.parses_bcftools})"
        )
        stored = store_check.Stored(output)
        failures = {aspect: check(stored, vcf.path) for aspect, check in store_check.CHECKS.items()}
        failures = {aspect: m for aspect, m in failures.items() if m}
        assert not failures, "\n".join(
            f"{aspect}:\n{store_check.report(m)}" for aspect, m in failures.items()
        )
    else:
        assert result.returncode == 1, (result.returncode, result.stderr)
        lines = result.stderr.splitlines()
        assert len(lines) == 1, result.stderr
        assert re.match(f"^error: {re.escape(str(vcf.path))}: ", lines[0]), lines[0]
        assert list(tmp_path.iterdir()) == [], "OUTPUT or a temporary directory left behind"
