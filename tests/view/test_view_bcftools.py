"""``bcftools view`` and ``vcfzarr-sql view`` with the same options on every corpus file.

As vcztools' ``test_bcftools_validation.py``: each row of :data:`MATRIX` is one bcftools view
command line (``{contig}``, ``{pos}``, ``{sample}`` and ``{samples_file}`` filled in from the
file), run by the bcftools binary on the original file (a process of its own: bcftools exits
on some files' genotypes) and by our CLI on its store; the records are equal one for one
after the normalisation of :mod:`vcf_text` (what a store does not keep). Adding an option is
adding a row. Headers are compared by test_view.py, and here the ``##INFO`` lines of AC and
AN, which bcftools adds where it counts alleles (``-c/-C/-q/-Q/-u/-U/-x/-X/-a``, ``-s``).
"""

from __future__ import annotations

import functools
import subprocess

import pytest
from corpus import corpus_files
from oracle import _indexed
from vcf_text import normalised

from vcfzarr_sql.cli import main
from vcfzarr_sql.errors import QueryError
from vcfzarr_sql.store import open_store

#: htslib keeps per-record quirks (a duplicated GT key) no store represents
NOT_ROUND_TRIPPED = {"samtools+htslib/test/noroundtrip.vcf"}
#: files of more genotype calls are left to test_view.py's whole-file comparison (one view of
#: the 15 M calls of the 1000 Genomes excerpt takes a minute; the matrix would take 15)
MAX_CALLS = 1_000_000
READABLE = [f for f in corpus_files() if f.bcftools_reads and f.parses_cyvcf2.startswith("ok")
            and f.id not in NOT_ROUND_TRIPPED and (f.records or 0) * (f.samples or 1) <= MAX_CALLS]

#: (id, bcftools view arguments, what the file needs: "samples", "gt")
MATRIX = [
    ("r", ["-r", "{contig}"], ()),
    ("t", ["-t", "^{contig}:1-{pos}"], ()),
    ("s", ["-s", "{sample}"], ("samples",)),
    ("S-I", ["-S", "{samples_file}", "-I"], ("samples",)),
    ("i", ["-i", 'QUAL>=30 || FILTER="PASS"'], ()),
    ("e", ["-e", 'N_ALT>1 || ID="."'], ()),
    ("i-gt", ["-i", 'GT="het" || GT="mis"'], ("gt",)),
    ("c", ["-c", "1"], ("gt",)),
    ("C-minor", ["-C", "1:minor"], ("gt",)),
    ("m-M", ["-m", "2", "-M", "2"], ()),
    ("v", ["-v", "snps,indels"], ()),
    ("V", ["-V", "snps"], ()),
    ("U-s", ["-U", "-s", "{sample}"], ("gt",)),
    ("n-f", ["-n", "-f", "PASS,."], ()),
    ("a", ["-a"], ("gt",)),
    ("a-s", ["-a", "-s", "{sample}"], ("gt",)),
]


#: rows that differ for a reason docs/reference.md states (view section)
KNOWN = {
    "sgkit-dev+bio2zarr/tests/data/vcf/sample_all_missing_gts.vcf.gz:i-gt":
        "a record without a GT key: the store cannot tell it from ./. (GT=\"mis\" holds here)",
    "samtools+htslib/test/tabix/vcf_file.vcf:c": "bcftools gives up counting 300 ALTs (Incorrect number of AC fields)",
    "samtools+htslib/test/tabix/vcf_file.vcf:C-minor": "bcftools gives up counting 300 ALTs (Incorrect number of AC fields)",
    "sgkit-dev+bio2zarr/tests/data/vcf/sample_all_missing_gts.vcf.gz:s":
        "a record without a GT key gets AC=0;AN=0 for -s (the store cannot tell it from ./.)",
    "sgkit-dev+bio2zarr/tests/data/vcf/sample_all_missing_gts.vcf.gz:a":
        "a record without a GT key: bcftools -a trims nothing there; in the store it is ./. (ALTs trimmed)",
    "sgkit-dev+bio2zarr/tests/data/vcf/sample_all_missing_gts.vcf.gz:a-s":
        "a record without a GT key: bcftools -a trims nothing there; in the store it is ./. (ALTs trimmed)",
    "vcfzarr-sql/fidelity.vcf:t": "bcftools -t ^1:1-1 also drops the POS 0 (telomere) records; view keeps them",
    "samtools+htslib/test/tabix/vcf_file.vcf:a": "bcftools gives up counting a record of AC=0 without ALT (AN=0)",
    "brentp+cyvcf2/cyvcf2/tests/test-hemi.vcf:a":
        "INFO/AC has 2 values for 1 ALT: bcftools gives up counting (AC=0;AN=0)",
    "brentp+cyvcf2/cyvcf2/tests/test-hemi.vcf:c": "INFO/AC has 2 values for 1 ALT: bcftools gives up counting (Incorrect number of AC fields)",
    "brentp+cyvcf2/cyvcf2/tests/test-hemi.vcf:C-minor": "INFO/AC has 2 values for 1 ALT: bcftools gives up counting (Incorrect number of AC fields)",
}


def _bcftools_view(*args: str) -> str:
    run = subprocess.run(["bcftools", "view", *args], capture_output=True, text=True)
    if run.returncode:
        pytest.skip(f"bcftools view {' '.join(args)}: {run.stderr.strip().splitlines()[-1]}")
    return run.stdout


@functools.cache
def _first_record(path: str) -> tuple[str, int] | None:
    """CHROM and POS (at least 1) of the file's first record as bcftools reads it, or None
    without records: one bcftools run per file, not per row of the matrix."""
    first = next(iter(_bcftools_view("-H", path).splitlines()), None)
    return None if first is None else (first.split("\t")[0], max(int(first.split("\t")[1]), 1))


def _cases():
    for corpus_file in READABLE:
        for name, args, needs in MATRIX:
            yield pytest.param(corpus_file, name, args, needs, id=f"{corpus_file.id}:{name}")


@pytest.mark.slow
@pytest.mark.parametrize(("corpus_file", "name", "args", "needs"), list(_cases()))
def test_view_equals_bcftools_view(corpus_file, name, args, needs, convert_once, tmp_path):
    try:
        store_path = convert_once(corpus_file.path)
    except QueryError as err:  # pragma: no cover (files the converter refuses are tested elsewhere)
        pytest.skip(str(err))
    store = open_store(store_path)
    if ("samples" in needs or "gt" in needs) and not store.num_samples:
        pytest.skip("no samples")
    if "gt" in needs and "GT" not in store.format_fields:
        pytest.skip("no GT")
    first = _first_record(str(corpus_file.path))
    if first is None:
        pytest.skip("no records")
    contig, pos = first
    samples_file = tmp_path / "samples.txt"
    samples_file.write_text("\n".join(list(store.samples)[::-2]) + "\n")
    filled = [a.format(contig=contig, pos=pos, sample=store.samples[-1] if store.num_samples else "",
                        samples_file=samples_file)
              for a in args]
    known = KNOWN.get(f"{corpus_file.id}:{name}")
    if known:
        pytest.xfail(known)
    try:
        source = _indexed(str(corpus_file.path)) if "-r" in filled else str(corpus_file.path)
    except OSError as err:
        pytest.skip(f"htslib cannot index it: {err}")
    expected = _bcftools_view(*filled, source)
    out = tmp_path / "out.vcf"
    assert main(["view", str(store_path), *filled, "-o", str(out)]) == 0
    assert _records(out.read_text()) == _records(expected)


def _records(text: str) -> list[str]:
    """The records and the header lines of INFO/AC and INFO/AN."""
    return [line for line in normalised(text)
            if not line.startswith("##") or line.startswith(("##INFO=<ID=AC,", "##INFO=<ID=AN,"))]
