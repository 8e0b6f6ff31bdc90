"""``vcfzarr-sql stats`` equals ``bcftools stats`` (Debian bcftools 1.16) line for line, every
data line of SN, TSTV, SiS, AF, QUAL, IDD, ST, DP, PSC, PSI and HWE: on simulated call sets
(SNPs, MNPs, indels longer than 60 bases, symbolic and ``*`` alleles, multiallelic sites,
haploid, diploid and triploid calls, missing and half-missing calls, FORMAT DP and AD, INFO/DP, with
and without INFO/AC and AN), with ``-s`` subsets, ``-r`` regions, ``-t`` targets, ``-i/-e``;
and on the small corpus files with genotypes.

bcftools reads the BCF of each simulated file: with a filter that needs only site fields,
bcftools does not parse the sample columns of a VCF (and counts no genotype), but does read
them from a BCF; the store has them either way.
"""

from __future__ import annotations

import subprocess
from typing import Any

import pytest
from click.testing import CliRunner
from corpus import readable_corpus
from fill_tags import BCFTOOLS, bcftools
from qc_simulate import qc_vcf

from vcfzarr_sql.cli import cli
from vcfzarr_sql.errors import VcfParseError
from vcfzarr_sql.qc import stats_lines
from vcfzarr_sql.view import Selection

pytestmark = pytest.mark.skipif(BCFTOOLS is None, reason="needs Debian bcftools")


def _data(lines) -> list[str]:
    """The data lines (bcftools' comments, and the ID line naming the file, left out)."""
    return [line for line in lines if line and not line.startswith(("#", "ID\t"))]


def _bcftools(path, *options: str) -> list[str]:
    done = subprocess.run([*bcftools("stats", *options), str(path)], capture_output=True, check=True)
    return _data(done.stdout.decode().splitlines())


def _selection(options: tuple[str, ...]) -> Selection:
    names = {"-s": "samples", "-r": "regions", "-t": "targets", "-i": "include", "-e": "exclude"}
    given: dict[str, Any] = {names[options[k]]: options[k + 1] for k in range(0, len(options), 2)}
    return Selection(**given)


def _ours(store, options: tuple[str, ...]) -> list[str]:
    return _data("".join(stats_lines(store, _selection(options))).splitlines())


@pytest.fixture(scope="module")
def simulated(tmp_path_factory, convert_once):
    """(BCF, store) of the simulated call set, and of the same with INFO/AC and AN."""
    root = tmp_path_factory.mktemp("qc")
    vcf = qc_vcf(root / "qc.vcf", seed=1)
    bcf, filled = root / "qc.bcf", root / "qc_ac.bcf"
    subprocess.run(bcftools("view", "-Ob", "-o", str(bcf), str(vcf)), check=True)
    subprocess.run(bcftools("+fill-tags", str(bcf), "-Ob", "-o", str(filled), "--", "-t", "AC,AN"),
                   check=True, capture_output=True)
    diploid = qc_vcf(root / "diploid.vcf", seed=2, ploidies=(1, 2, 2, 2))  # (at most two alleles)
    diploid_bcf = root / "diploid.bcf"
    subprocess.run(bcftools("view", "-Ob", "-o", str(diploid_bcf), str(diploid)), check=True)
    for path in (bcf, filled, diploid_bcf):
        subprocess.run(bcftools("index", "-f", str(path)), check=True)
    return {"plain": (bcf, convert_once(vcf, variants_chunk_size=25, samples_chunk_size=5)),
            "ac_an": (filled, convert_once(filled, variants_chunk_size=40, samples_chunk_size=7)),
            "diploid": (diploid_bcf, convert_once(diploid, variants_chunk_size=30))}


CASES = [
    ("plain", ()),
    ("plain", ("-s", "-")),
    ("plain", ("-s", "s3,s1,s7")),
    ("plain", ("-s", "-", "-r", "1:100-400,2:1000-1300")),
    ("plain", ("-s", "s11,s0", "-r", "1:1-300,2:1200-1400")),
    ("plain", ("-s", "-", "-t", "1:100-400")),
    ("plain", ("-s", "-", "-i", "QUAL>20")),
    ("plain", ("-s", "s2", "-e", "INFO/DP>300", "-r", "2")),
    ("plain", ("-s", "-", "-i", 'GT="het"')),
    ("ac_an", ()),
    ("ac_an", ("-s", "s5,s2")),
    ("ac_an", ("-s", "-", "-r", "2")),
    ("diploid", ("-s", "-")),
    ("diploid", ("-s", "s9,s4,s5", "-r", "1")),
]


@pytest.mark.parametrize(("name", "options"), CASES, ids=[f"{n}:{' '.join(o)}" for n, o in CASES])
def test_simulated(simulated, name, options):
    bcf, store = simulated[name]
    expected = _bcftools(bcf, *options)
    assert any(line.startswith("IDD\t") for line in expected)
    assert _ours(store, options) == expected


def test_cli_prints_the_sections_asked(simulated):
    bcf, store = simulated["plain"]
    result = CliRunner().invoke(cli, ["stats", str(store), "-s", "s1,s2", "--sections", "PSC,TSTV"])
    assert result.exit_code == 0, result.output
    expected = [line for line in _bcftools(bcf, "-s", "s1,s2") if line.startswith(("PSC\t", "TSTV\t"))]
    assert _data(result.output.splitlines()) == expected


def _records_without_gt(vcf) -> bool:
    """Whether some record has samples but no GT while others have GT: the store cannot tell
    its calls from missing ones (bcftools counts them nowhere)."""
    body = subprocess.run(bcftools("view", "-H", str(vcf)), capture_output=True).stdout
    formats = [f[8].split(b":") for f in (line.split(b"\t") for line in body.splitlines()) if len(f) > 9]
    with_gt = sum(b"GT" in f for f in formats)
    return 0 < with_gt < len(formats)


#: The small corpus files with samples (the suite's CPU budget: larger ones add no case).
GENOTYPED = [pytest.param(f, id=f.id) for f in readable_corpus()
             if (f.samples or 0) > 0 and (f.records or 0) <= 1000]


@pytest.mark.parametrize("corpus_file", GENOTYPED)
def test_corpus_files(convert_once, corpus_file):
    try:
        expected = {o: _bcftools(corpus_file.path, *o) for o in ((), ("-s", "-"))}
    except subprocess.CalledProcessError as error:
        pytest.skip(f"bcftools: {error.stderr.decode(errors='replace')[:200]}")
    if _records_without_gt(corpus_file.path):
        pytest.skip("records without GT among records with GT")
    try:
        store = convert_once(corpus_file.path)
    except VcfParseError as error:  # not this module's subject (see test_sql_corpus)
        pytest.skip(str(error)[:200])
    for options, lines in expected.items():
        assert _ours(store, options) == lines, options
