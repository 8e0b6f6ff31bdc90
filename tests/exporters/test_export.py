"""``export``: PLINK 1 .bed, PLINK 2 .pgen, BGEN 1.2 and AnnData of a store, checked against
plink2 reading the original VCF and against bcftools' genotypes.

plink2's ``--freq counts``, ``--missing`` and ``--hardy`` on an export equal the same command on
the original VCF (``--vcf-half-call missing``; ``--max-alleles 2`` for .bed and BGEN, which
plink2 reads only biallelic), for simulated cohorts and every corpus file with genotypes
that plink2 reads; BGEN's probabilities of any ploidy equal those computed by hand from
bcftools' GT; AnnData's X equals the ALT dosage of bcftools' GT
(tests/oracle.py). Selections export exactly what ``view`` writes with the same options.
"""

from __future__ import annotations

import functools
import itertools
import math
import re
import struct
import subprocess
import zlib
from pathlib import Path

import anndata
import numpy as np
import pytest
from cohort import cohort_vcf
from corpus import CORPUS, CorpusFile, readable_corpus
from engine_cases import SLOW_CALLS, SLOW_RECORDS, corpus_store, corpus_store_or_none
from numcodecs import Zstd
from oracle import genotype_arrays

from vcfzarr_sql.cli import main
from vcfzarr_sql.errors import NotSupportedError, QueryError
from vcfzarr_sql.exporters import export, to_anndata
from vcfzarr_sql.query.selection import Selection
from vcfzarr_sql.store import open_store
from vcfzarr_sql.view import vcf_lines

VCFS = CORPUS / "sgkit-dev+bio2zarr/tests/data/vcf"
REPORTS = ("acount", "smiss", "vmiss", "hardy")
#: format -> (the plink2 input options of OUT, whether plink2 needs --max-alleles 2)
INPUTS = {
    "plink": (lambda out: ["--bfile", out], True),
    "pgen": (lambda out: ["--pfile", out], False),
    "bgen": (lambda out: ["--bgen", out + ".bgen", "ref-first", "--sample", out + ".sample"], True),
}
#: corpus file -> why plink2 cannot read it (its error, or ours: asserted, then skipped), for
#: every format, or for the biallelic ones (.bed, BGEN: ``--max-alleles 2``) or for one format
PLINK2_CANNOT_READ: dict[str, tuple[str, str]] = {
    "samtools+htslib/test/tabix/vcf_file.vcf": ("all", "a variant with 305 ALT alleles; this build of plink2 is limited to 254"),
    "sgkit-dev+bio2zarr/tests/data/vcf/empty.vcf.gz": ("all", "No variants in --vcf file"),
    "hail-is+hail/hail/hail/test/resources/gvcfs/long_line.g.vcf.gz": ("all", "contains a space; this cannot be imported"),
    "hail-is+hail/hail/hail/test/resources/skip_invalid_loci.vcf": ("all", "Sample ID cannot be '0'"),
    "broadinstitute+gatk/src/test/resources/org/broadinstitute/hellbender/tools/copynumber/gcnv-postprocess/"
    "intervals_output_SAMPLE_001.vcf.gz": ("all", "does not have expected FORMAT/GT format"),
    "broadinstitute+gatk/src/test/resources/org/broadinstitute/hellbender/tools/walkers/GenotypeGVCFs/"
    "multiallelicQualRegression.vcf": ("biallelic", "No variants loaded"),  # (every record multi-allelic)
    "sgkit-dev+bio2zarr/tests/data/vcf/mixed_ploidy.vcf.gz": ("pgen", "has ploidy 3; a .pgen holds haploid and diploid calls only"),
}


class Plink2Error(Exception):
    """plink2 stopped with an error (its message)."""


@pytest.fixture(scope="module")
def cohorts(tmp_path_factory, convert_once) -> dict[str, tuple[Path, Path]]:
    """name -> (VCF, store): the simulated cohorts (diploid; haploid and mixed ploidy; and
    polyploid, for BGEN) and two corpus files, converted in chunks of 50 records and 16 samples."""
    folder = tmp_path_factory.mktemp("cohorts")
    vcfs = {"diploid": cohort_vcf(folder, seed=1), "haploid": cohort_vcf(folder, haploid=True, seed=2),
            "sample": VCFS / "sample.vcf.gz", "chr22": VCFS / "chr22.vcf.gz",
            "polyploid": cohort_vcf(folder, samples=12, records=60, haploid=True, polyploid=True, seed=3)}
    return {name: (vcf, convert_once(vcf, variants_chunk_size=50, samples_chunk_size=16))
            for name, vcf in vcfs.items()}


def _plink2_reports(inputs: list[str], biallelic: bool, out: Path) -> dict[str, list[list[str]] | None]:
    """plink2's --freq counts, --missing and --hardy reports of ``inputs``, as rows of fields
    (without a FID column: a .fam always has one, a VCF none)."""
    half_calls = ["--vcf-half-call", "missing"] if inputs[0] in ("--vcf", "--bcf") else []
    args = ["plink2", *inputs, *half_calls, "--allow-extra-chr", "--freq", "counts", "--missing", "--hardy",
            "--out", str(out)] + (["--max-alleles", "2"] if biallelic else [])
    run = subprocess.run(args, capture_output=True, text=True)
    if run.returncode:
        raise Plink2Error(" ".join((run.stdout + run.stderr).split()))  # (its lines wrapped)
    reports: dict[str, list[list[str]] | None] = {}
    for name in REPORTS:
        report = Path(f"{out}.{name}")
        if not report.exists():  # (no --hardy of chrM, say)
            reports[name] = None
            continue
        rows = [line.split("\t") for line in report.read_text().splitlines()]
        if rows[0][0] == "#FID":
            rows = [["#IID", *row[2:]] if k == 0 else row[1:] for k, row in enumerate(rows)]
        reports[name] = rows
    return reports


@functools.cache
def _vcf_reports(vcf: Path, biallelic: bool, folder: Path) -> dict[str, list[list[str]] | None]:
    name = str(vcf).replace("/", "_")[-120:]
    return _plink2_reports(["--bcf" if vcf.suffix == ".bcf" else "--vcf", str(vcf)], biallelic, folder / f"{name}-{biallelic}")


def _check_export(vcf: Path, store: Path | str, format_: str, out: str, folder: Path) -> None:
    """plink2's reports of the export of ``store`` as ``format_`` (``bgen-zstd``: BGEN with
    zstd) equal those of ``vcf``."""
    base, _, compression = format_.partition("-")
    summary = export(store, out, base, compression=compression or None)
    inputs, biallelic = INPUTS[base]
    ours = _plink2_reports(inputs(out), biallelic, Path(out + "-plink2"))
    assert ours == _vcf_reports(vcf, biallelic, folder), vcf
    vmiss = ours["vmiss"]
    assert vmiss is not None
    assert summary.records == len(vmiss) - 1 if base == "plink" else summary.records >= len(vmiss) - 1


@pytest.mark.parametrize("cohort", ["diploid", "haploid"])
@pytest.mark.parametrize("format_", ["plink", "pgen", "bgen", "bgen-zstd"])
def test_plink2_reports_equal_those_of_the_vcf(cohorts, tmp_path_factory, format_, cohort):
    vcf, store = cohorts[cohort]
    _check_export(vcf, store, format_, str(tmp_path_factory.mktemp("export") / cohort), tmp_path_factory.getbasetemp())


def _corpus_with_samples(large: bool) -> list[CorpusFile]:
    """The corpus files bcftools reads that have samples: those of more than
    engine_cases.SLOW_CALLS calls or SLOW_RECORDS records (``large``), or the others."""
    return [f for f in readable_corpus() if f.samples and large == (
        (f.records or 0) * f.samples > SLOW_CALLS or (f.records or 0) > SLOW_RECORDS)]


@pytest.mark.parametrize("large", [False, pytest.param(True, marks=pytest.mark.slow)], ids=["small", "large"])
@pytest.mark.parametrize("format_", ["plink", "pgen", "bgen"])
def test_plink2_reports_equal_those_of_the_vcf_on_the_corpus(convert_once, tmp_path_factory, format_, large):
    """Every corpus file with genotypes (its store shared with the other corpus tests), in one
    test a format and size: plink2 on the export equals plink2 on the file, or the file is
    one plink2 (or the format) cannot hold, for the reason PLINK2_CANNOT_READ gives."""
    folder, checked = tmp_path_factory.mktemp("corpus"), 0
    biallelic = INPUTS[format_][1]
    for corpus_file in _corpus_with_samples(large):
        store = corpus_store_or_none(corpus_store(corpus_file), convert_once)
        if store is None or "GT" not in open_store(store).format_fields:
            continue
        scope, reason = PLINK2_CANNOT_READ.get(corpus_file.id, ("", ""))
        if scope in ("all", format_) or (scope == "biallelic" and biallelic):
            with pytest.raises((Plink2Error, NotSupportedError), match=re.escape(reason)):
                _vcf_reports(corpus_file.path, biallelic, tmp_path_factory.getbasetemp())
                export(store, str(folder / "refused"), format_)
            continue
        _check_export(corpus_file.path, store, format_, str(folder / f"file{checked}"), tmp_path_factory.getbasetemp())
        checked += 1
    assert checked >= (4 if large else 15)


def _call(gt: str) -> str:
    """A GT as a .pgen keeps it: missing (half-missing too), a homozygote (a haploid call as
    one), an unphased heterozygote (alleles sorted) or a phased one."""
    alleles = gt.replace("|", "/").split("/")
    if "." in alleles:
        return "missing"
    if len(set(alleles)) == 1:
        return alleles[0] * 2
    return "|".join(alleles) if "|" in gt else "/".join(sorted(alleles))


@pytest.mark.parametrize("cohort", ["diploid", "haploid"])
def test_pgen_keeps_alleles_and_phase(cohorts, tmp_path, cohort):
    vcf, store = cohorts[cohort]
    export(store, tmp_path / "x", "pgen")
    subprocess.run(["plink2", "--pfile", str(tmp_path / "x"), "--export", "vcf", "--out", str(tmp_path / "back")],
                   check=True, capture_output=True)

    def calls(text: str) -> list[list[str]]:
        return [[_call(gt) for gt in line.split("\t")[9:]] for line in text.splitlines() if not line.startswith("#")]

    original = subprocess.run(["bcftools", "view", "-H", str(vcf)], check=True, capture_output=True, text=True).stdout
    assert calls((tmp_path / "back.vcf").read_text()) == calls(original)


def test_plink_leaves_out_and_counts_multiallelic_records(cohorts, tmp_path):
    vcf, store = cohorts["diploid"]
    summary = export(store, tmp_path / "x", "plink")
    alts = [line.split("\t")[4] for line in vcf_lines(open_store(store)) if not line.startswith("#")]
    assert summary.left_out == sum("," in alt for alt in alts) > 0
    assert summary.records + summary.left_out == len(alts)


def _dosage(alleles: np.ndarray) -> np.ndarray:
    """(samples, records) ALT dosage of bcftools' GT (-1 a missing allele, -2 padding)."""
    missing = (alleles == -1).any(axis=2) | (alleles == -2).all(axis=2)
    return np.where(missing, np.nan, (alleles > 0).sum(axis=2)).T


@pytest.mark.parametrize("cohort", ["haploid", "sample"])
@pytest.mark.parametrize("suffix", [".h5ad", ".zarr"])
def test_anndata_x_is_the_dosage_of_bcftools_genotypes(cohorts, tmp_path, cohort, suffix):
    vcf, store = cohorts[cohort]
    export(store, tmp_path / f"x{suffix}", "anndata", allele_layers=True)
    data = (anndata.read_h5ad if suffix == ".h5ad" else anndata.read_zarr)(tmp_path / f"x{suffix}")
    alleles, phased = genotype_arrays(vcf)
    assert data.X.dtype == np.float32
    np.testing.assert_array_equal(data.X, _dosage(alleles))
    # the layers: each allele of each call as bcftools reads it (-1 missing, -2 none), phase
    assert sorted(data.layers) == ["allele_1", "allele_2", "phased"]
    for k in range(2):
        assert data.layers[f"allele_{k + 1}"].dtype == np.int8
        np.testing.assert_array_equal(data.layers[f"allele_{k + 1}"], alleles[:, :, k].T)
    np.testing.assert_array_equal(data.layers["phased"], phased.T)
    samples = subprocess.run(["bcftools", "query", "-l", str(vcf)], check=True, capture_output=True,
                             text=True).stdout.split()
    assert list(data.obs_names) == samples
    sites = subprocess.run(["bcftools", "query", "-f", "%CHROM\t%POS\t%ID\t%REF\t%ALT\n", str(vcf)],
                           check=True, capture_output=True, text=True).stdout.splitlines()
    var = data.var
    assert ["\t".join(map(str, row)) for row in zip(var.contig, var.pos, var.id, var.ref, var.alt)] == sites
    # the sample statistics: calls missing in X are n_missing; gt_NS counts calls with an
    # allele called (bcftools NS: 0/. too)
    np.testing.assert_array_equal(data.obs.n_missing, np.isnan(data.X).sum(axis=1))
    np.testing.assert_array_equal(data.var.gt_NS, (alleles >= 0).any(axis=2).sum(axis=1))


def test_sparse_x_holds_the_dense_values(cohorts):
    _, store = cohorts["diploid"]
    dense, sparse = to_anndata(store, allele_layers=True), to_anndata(store, sparse=True, allele_layers=True)
    assert sparse.X.format == "csr"
    np.testing.assert_array_equal(sparse.X.toarray(), dense.X)
    for name in ("allele_1", "allele_2", "phased"):
        assert sparse.layers[name].format == "csr"
        np.testing.assert_array_equal(sparse.layers[name].toarray(), dense.layers[name])
    assert not to_anndata(store).layers  # (only on request)


SELECTIONS = [
    {"regions": "1:1000-4000,2:200-900"},
    {"samples": "S007,S001,S030"},
    {"samples": "^S000,S001", "targets": "2"},
    {"include": "N_ALT>1"},
    {"exclude": 'GT="het"', "samples": "S003,S002"},
]


@pytest.mark.parametrize("selection", SELECTIONS, ids=lambda s: ",".join(f"{k}={v}" for k, v in s.items()))
def test_selection_exports_what_view_writes(cohorts, selection):
    _, store = cohorts["diploid"]
    lines = list(vcf_lines(open_store(store), Selection(**selection)))
    names = lines[0].splitlines()[-1].split("\t")[9:]
    records = [line.rstrip("\n").split("\t") for line in lines[1:]]
    data = to_anndata(store, Selection(**selection))
    assert list(data.obs_names) == names
    assert [f"{r[0]}:{r[1]}:{r[3]}:{r[4]}" for r in records] == list(data.var_names)
    genotypes = [[call.split(":")[0].replace("|", "/").split("/") for call in r[9:]] for r in records]
    expected = np.array([[np.nan if "." in g else sum(a != "0" for a in g) for g in row]
                         for row in genotypes], dtype=np.float32).reshape(len(records), len(names))
    np.testing.assert_array_equal(data.X, expected.T)


def test_selection_of_a_pgen_is_that_of_view(cohorts, tmp_path):
    _, store = cohorts["haploid"]
    selection = Selection(regions="2:1000-5000", samples="S010,S004")
    export(store, tmp_path / "x", "pgen", selection)
    pvar = [line.split("\t")[:2] for line in (tmp_path / "x.pvar").read_text().splitlines()[1:]]
    lines = list(vcf_lines(open_store(store), selection))
    assert pvar == [line.split("\t")[:2] for line in lines[1:]]
    assert (tmp_path / "x.psam").read_text().split()[2::2] == ["S010", "S004"]


def test_polyploid_calls_are_refused_in_one_line(convert_once, tmp_path):
    store = convert_once(VCFS / "mixed_ploidy.vcf.gz")
    with pytest.raises(NotSupportedError, match=r"record 1:6: sample 1 has ploidy 3; .* haploid and diploid calls only"):
        export(store, tmp_path / "x", "pgen")
    # (the .bed leaves that multi-allelic record out; AnnData holds any ploidy: a dosage; BGEN
    # any ploidy: test_bgen_holds_the_calls_of_every_ploidy)
    assert export(store, tmp_path / "x", "plink").left_out == 2
    export(store, tmp_path / "x.h5ad", "anndata")


def _read_bgen(path: Path) -> list[tuple[list[str], list[int], list[bool], bool, list[list[int]]]]:
    """Each variant of a BGEN 1.2 layout 2 file of 8-bit probabilities, read as its spec
    says: (alleles, ploidy and missingness of each sample, phased, each sample's stored
    probabilities times 255)."""
    data = path.read_bytes()
    offset, _, variants, samples = struct.unpack_from("<IIII", data, 0)
    flags = struct.unpack_from("<I", data, 20)[0]
    decompress = {1: zlib.decompress, 2: lambda raw: bytes(Zstd().decode(raw))}[flags & 3]
    at, out = offset + 4, []
    for _ in range(variants):
        for _ in range(3):  # variant id, rsid, chromosome
            at += 2 + struct.unpack_from("<H", data, at)[0]
        at += 4
        count = struct.unpack_from("<H", data, at)[0]
        at += 2
        alleles = []
        for _ in range(count):
            length = struct.unpack_from("<I", data, at)[0]
            alleles.append(data[at + 4:at + 4 + length].decode())
            at += 4 + length
        size, full = struct.unpack_from("<II", data, at)
        block = decompress(data[at + 8:at + 4 + size])
        assert len(block) == full
        at += 4 + size
        assert struct.unpack_from("<IH", block, 0) == (samples, count)
        states = block[8:8 + samples]
        phased, bits = block[8 + samples], block[9 + samples]
        assert bits == 8
        ploidy = [s & 0x3F for s in states]
        assert (block[6], block[7]) == (min(ploidy), max(ploidy))
        values, cut, probabilities = list(block[10 + samples:]), 0, []
        for p in ploidy:
            width = p * (count - 1) if phased else math.comb(p + count - 1, count - 1) - 1
            probabilities.append(values[cut:cut + width])
            cut += width
        assert cut == len(values)
        out.append((alleles, ploidy, [bool(s & 0x80) for s in states], bool(phased), probabilities))
    return out


def _expected_bgen(vcf: Path) -> list[tuple[list[str], list[int], list[bool], bool, list[list[int]]]]:
    """What _read_bgen should read of an export of ``vcf``, from bcftools' GT by hand: a
    missing or half-missing call is a missing sample; a record is phased when its calls of
    two alleles or more are phased or missing; a hard call is 255 at its genotype (phased:
    at its allele on each haplotype; unphased: its vector of allele counts in colex order),
    the last of each sample's probabilities left out."""
    rows = subprocess.run(["bcftools", "query", "-f", "%REF,%ALT[\t%GT]\n", str(vcf)], check=True,
                          capture_output=True, text=True).stdout.splitlines()
    out = []
    for row in rows:
        fields = row.split("\t")
        alleles, calls = fields[0].split(","), fields[1:]
        k = len(alleles)
        split = [gt.replace("|", "/").split("/") for gt in calls]
        missing = ["." in gt for gt in split]
        phased = all(m or len(gt) == 1 or "/" not in call for gt, m, call in zip(split, missing, calls))
        probabilities = []
        for gt, m in zip(split, missing):
            if phased:
                haplotypes = [[255 * (not m and int(a) == b) for b in range(k)] for a in gt]
                probabilities.append([v for h in haplotypes for v in h[:-1]])
                continue
            vectors = sorted(itertools.product(range(len(gt) + 1), repeat=k), key=lambda v: v[::-1])
            vectors = [v for v in vectors if sum(v) == len(gt)]
            counts = None if m else tuple(sum(int(a) == b for a in gt) for b in range(k))
            probabilities.append([255 * (v == counts) for v in vectors][:-1])
        out.append((alleles, [len(gt) for gt in split], missing, phased, probabilities))
    return out


@pytest.mark.parametrize("compression", ["zlib", "zstd"])
def test_bgen_holds_the_calls_of_every_ploidy(cohorts, convert_once, tmp_path, compression):
    for vcf in (VCFS / "mixed_ploidy.vcf.gz", cohorts["polyploid"][0]):
        store = convert_once(vcf, variants_chunk_size=50, samples_chunk_size=16)
        export(store, tmp_path / "x", "bgen", compression=compression)
        assert _read_bgen(tmp_path / "x.bgen") == _expected_bgen(vcf)


def test_refusals(cohorts, tmp_path):
    _, store = cohorts["sample"]
    with pytest.raises(QueryError, match="unknown export format 'vcf'"):
        export(store, tmp_path / "x", "vcf")
    with pytest.raises(QueryError, match="named .h5ad"):
        export(store, tmp_path / "x.csv", "anndata")
    with pytest.raises(QueryError, match="compression applies to a bgen export, not plink"):
        export(store, tmp_path / "x", "plink", compression="zstd")
    with pytest.raises(QueryError, match="compression 'gzip': a bgen export's is one of zlib, zstd"):
        export(store, tmp_path / "x", "bgen", compression="gzip")
    with pytest.raises(QueryError, match="allele layers are an anndata export's, not pgen's"):
        export(store, tmp_path / "x", "pgen", allele_layers=True)
    with pytest.raises(QueryError, match="-i and -e cannot be used together"):
        export(store, tmp_path / "x", "plink", Selection(include="POS>1", exclude="POS>2"))
    assert not (tmp_path / "x.bed").exists() and not (tmp_path / "x.bgen").exists()


def test_a_store_without_genotypes_is_refused_before_writing(convert_once, tmp_path):
    store = convert_once(CORPUS / "samtools+htslib/test/formatcols.vcf")
    with pytest.raises(NotSupportedError, match="no genotypes"):
        export(store, tmp_path / "x", "plink")
    assert list(tmp_path.iterdir()) == []


def test_command_line(cohorts, tmp_path, capsys):
    _, store = cohorts["diploid"]
    assert main(["export", str(store), str(tmp_path / "x"), "--format", "plink", "-r", "1", "-s", "S001,S002"]) == 0
    message = capsys.readouterr().err
    assert "x 2 samples written to" in message and "with more than one ALT left out" in message
    assert (tmp_path / "x.fam").read_text().split()[1::6] == ["S001", "S002"]
