"""The sections of ``bcftools stats`` as it prints them (``vcfstats.c``'s ``print_stats``):
:func:`section_rows` gives a section's data rows (lists of fields), :func:`stats_text` the text
with bcftools' comment lines, so that the output feeds ``plot-vcfstats`` and line-by-line
comparisons. Floats are formatted as C's printf does, from float32 where bcftools computes
in ``float``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import numpy as np

from vcfzarr_sql.errors import QueryError
from vcfzarr_sql.query.stats_totals import (
    DP_BINS,
    DP_MAX,
    DP_MIN,
    HWE_BINS,
    MAX_INDEL,
    SAMPLE_ROW,
    SN_COUNTERS,
    Totals,
    quality_bin_start,
)

#: The sections, in bcftools' order; those after DP need ``-s``.
SECTIONS = ("SN", "TSTV", "SiS", "AF", "QUAL", "IDD", "ST", "DP", "PSC", "PSI", "HWE")
SAMPLE_SECTIONS = ("PSC", "PSI", "HWE")

#: bcftools' comment lines before each section's rows.
COMMENTS = {
    "SN": "# SN, Summary numbers:\n"
          "#   number of records   .. number of data rows in the VCF\n"
          "#   number of no-ALTs   .. reference-only sites, ALT is either \".\" or identical to REF\n"
          "#   number of SNPs      .. number of rows with a SNP\n"
          "#   number of MNPs      .. number of rows with a MNP, such as CC>TT\n"
          "#   number of indels    .. number of rows with an indel\n"
          "#   number of others    .. number of rows with other type, for example a symbolic allele or\n"
          "#                          a complex substitution, such as ACT>TCGA\n"
          "#   number of multiallelic sites     .. number of rows with multiple alternate alleles\n"
          "#   number of multiallelic SNP sites .. number of rows with multiple alternate alleles, all SNPs\n"
          "# \n"
          "#   Note that rows containing multiple types will be counted multiple times, in each\n"
          "#   counter. For example, a row with a SNP and an indel increments both the SNP and\n"
          "#   the indel counter.\n"
          "# \n"
          "# SN\t[2]id\t[3]key\t[4]value\n",
    "TSTV": "# TSTV, transitions/transversions:\n# TSTV\t[2]id\t[3]ts\t[4]tv\t[5]ts/tv\t[6]ts (1st ALT)"
            "\t[7]tv (1st ALT)\t[8]ts/tv (1st ALT)\n",
    "SiS": "# SiS, Singleton stats:\n# SiS\t[2]id\t[3]allele count\t[4]number of SNPs\t[5]number of "
           "transitions\t[6]number of transversions\t[7]number of indels\t[8]repeat-consistent\t"
           "[9]repeat-inconsistent\t[10]not applicable\n",
    "AF": "# AF, Stats by non-reference allele frequency:\n# AF\t[2]id\t[3]allele frequency\t[4]number "
          "of SNPs\t[5]number of transitions\t[6]number of transversions\t[7]number of indels\t"
          "[8]repeat-consistent\t[9]repeat-inconsistent\t[10]not applicable\n",
    "QUAL": "# QUAL, Stats by quality\n# QUAL\t[2]id\t[3]Quality\t[4]number of SNPs\t[5]number of "
            "transitions (1st ALT)\t[6]number of transversions (1st ALT)\t[7]number of indels\n",
    "IDD": "# IDD, InDel distribution:\n# IDD\t[2]id\t[3]length (deletions negative)\t[4]number of "
           "sites\t[5]number of genotypes\t[6]mean VAF\n",
    "ST": "# ST, Substitution types:\n# ST\t[2]id\t[3]type\t[4]count\n",
    "DP": "# DP, Depth distribution\n# DP\t[2]id\t[3]bin\t[4]number of genotypes\t[5]fraction of "
          "genotypes (%)\t[6]number of sites\t[7]fraction of sites (%)\n",
    "PSC": "# PSC, Per-sample counts. Note that the ref/het/hom counts include only SNPs, for indels "
           "see PSI. The rest include both SNPs and indels.\n# PSC\t[2]id\t[3]sample\t[4]nRefHom\t"
           "[5]nNonRefHom\t[6]nHets\t[7]nTransitions\t[8]nTransversions\t[9]nIndels\t[10]average "
           "depth\t[11]nSingletons\t[12]nHapRef\t[13]nHapAlt\t[14]nMissing\n",
    "PSI": "# PSI, Per-Sample Indels. Note that alt-het genotypes with both ins and del allele are "
           "counted twice, in both nInsHets and nDelHets.\n# PSI\t[2]id\t[3]sample\t[4]in-frame\t"
           "[5]out-frame\t[6]not applicable\t[7]out/(in+out) ratio\t[8]nInsHets\t[9]nDelHets\t"
           "[10]nInsAltHoms\t[11]nDelAltHoms\n",
    "HWE": "# HWE\n# HWE\t[2]id\t[3]1st ALT allele frequency\t[4]Number of observations\t[5]25th "
           "percentile\t[6]median\t[7]75th percentile\n",
}

_BASES = "ACGT"


def _ratio(a: int, b: int) -> str:
    """``%.2f`` of the float32 ratio, 0 when ``b`` is 0."""
    return f"{float(np.float32(a) / np.float32(b)) if b else 0:.2f}"


def _folded_af(totals: Totals) -> np.ndarray:
    """The AF counts with the singleton bin added to bin 1 (as bcftools does after SiS)."""
    af = totals.af.copy()
    af[:, 1] += af[:, 0]
    return af


def section_rows(totals: Totals, section: str, sample_names: Sequence[str] = ()) -> list[list[str]]:
    """The data rows of ``section`` (one of :data:`SECTIONS`), each a list of its fields
    (``SN``, ``0``, ...)."""
    return [[section, "0", *row] for row in zip(*_section_columns(totals, section, sample_names))]


def _section_columns(totals: Totals, section: str, names: Sequence[str]) -> list[list[str]]:
    """The fields of the data rows of ``section`` after its name and id, column by column
    (none: no row): the long sections (one row per AF bin or sample) made a column at a time."""
    if section in _COLUMNS:
        return [list(map(fmt.__mod__, values)) for fmt, values in _COLUMNS[section](totals, names)]
    rows = [list(map(str, row)) for row in _rows(totals, section)]
    return [list(column) for column in zip(*rows)]


def _rows(totals: Totals, section: str) -> Iterator[list[object]]:
    if section == "SN":
        yield ["number of samples:", totals.num_samples]
        for name, value in zip(SN_COUNTERS, totals.sn.tolist()):
            yield [f"number of {name}:", value]
    elif section == "TSTV":
        ts, tv = int(totals.af[1].sum()), int(totals.af[2].sum())
        ts1, tv1 = totals.ts_tv_alt1.tolist()
        yield [ts, tv, _ratio(ts, tv), ts1, tv1, _ratio(ts1, tv1)]
    elif section == "SiS":
        snps, ts, tv, indels = totals.af[:, 0].tolist()
        yield [1, snps, ts, tv, indels, 0, 0, indels]
    elif section == "QUAL":
        q_ts, q_tv, q_indels = totals.quality
        for index in sorted(set(q_ts) | set(q_tv) | set(q_indels)):
            start = quality_bin_start(index)
            quality = "." if start <= 0 else f"{float(np.float32(0.1 * (start - 1))):.1f}"
            yield [quality, q_ts[index] + q_tv[index], q_ts[index], q_tv[index], q_indels[index]]
    elif section == "IDD":
        for lengths, sign, order in ((totals.deletions, -1, -1), (totals.insertions, 1, 1)):
            for i in np.flatnonzero(lengths)[::order]:
                vaf_bin = MAX_INDEL + sign * (int(i) + 1)
                n = int(totals.vaf_n[vaf_bin])
                vaf = f"{totals.vaf_sum[vaf_bin] / n:.2f}" if n else "."
                yield [sign * (int(i) + 1), int(lengths[i]), n, vaf]
    elif section == "ST":
        for t in range(15):
            if t >> 2 != t & 3:
                yield [f"{_BASES[t >> 2]}>{_BASES[t & 3]}", int(totals.substitutions[t])]
    elif section == "DP":
        calls, sites = totals.dp_calls, totals.dp_sites
        n_calls, n_sites = int(calls.sum()), int(sites.sum())
        for i in np.flatnonzero(calls | sites):
            label = f"<{DP_MIN}" if i == 0 else f">{DP_MAX}" if i + 1 == DP_BINS else str(i - 1 + DP_MIN)
            yield [label, int(calls[i]), f"{calls[i] * 100.0 / n_calls if n_calls else 0:f}",
                   int(sites[i]), f"{sites[i] * 100.0 / n_sites if n_sites else 0:f}"]
    else:
        raise QueryError(f"unknown section {section!r}: expected one of {', '.join(SECTIONS)}")


#: A column of a long section: its values, and the printf format of each.
Column = tuple[str, list]


def _af_columns(totals: Totals, names: Sequence[str]) -> list[Column]:
    af = _folded_af(totals)
    bins = np.flatnonzero(af[:, 1:].any(axis=0)) + 1
    snps, ts, tv, indels = (("%d", counts.tolist()) for counts in af[:, bins])
    zeros = ("%d", [0] * len(bins))
    return [_af_labels(bins, totals.m_af), snps, ts, tv, indels, zeros, zeros, indels]


def _af_labels(bins: np.ndarray, m_af: int) -> Column:
    """The allele frequency of each AF bin as bcftools prints it (``%f`` of ``(bin - 1) /
    (m_af - 1)``)."""
    return "%f", ((bins - 1) / (m_af - 1)).tolist()


def _psc_columns(totals: Totals, names: Sequence[str]) -> list[Column]:
    s = totals.samples
    n = s[SAMPLE_ROW["dp_n"]]
    with np.errstate(divide="ignore", invalid="ignore"):  # (float32, as bcftools)
        depth = np.where(n > 0, s[SAMPLE_ROW["dp_sum"]].astype(np.float32) / n.astype(np.float32), 0)
    return [("%s", list(names)), *_counters(s, "hom_ref", "hom_alt", "het", "ts", "tv", "indels"),
            ("%.1f", depth.tolist()), *_counters(s, "singletons", "hap_ref", "hap_alt", "missing")]


def _psi_columns(totals: Totals, names: Sequence[str]) -> list[Column]:
    zeros = ("%d", [0] * len(names))
    return [("%s", list(names)), zeros, zeros, zeros, ("%s", ["0.00"] * len(names)),
            *_counters(totals.samples, "ins_hets", "del_hets", "ins_homs", "del_homs")]


def _counters(samples: np.ndarray, *counters: str) -> list[Column]:
    """The values of ``counters`` (rows of :attr:`Totals.samples`) of every sample."""
    return [("%d", samples[SAMPLE_ROW[c]].tolist()) for c in counters]


#: HWE's percentile labels: het bin j as bcftools prints it (float32 j / 100).
_HWE_LABELS = [f"{float(np.float32(j) / np.float32(HWE_BINS)):f}" for j in range(HWE_BINS)]


def _hwe_columns(totals: Totals, names: Sequence[str]) -> list[Column]:
    """Per AF bin with records: the records, and the 25th, 50th and 75th percentiles of their
    fraction of heterozygous calls (in hundredths, as bcftools bins them)."""
    bins, records, cuts = totals.hwe_quartiles()
    return [_af_labels(bins, totals.m_af), ("%d", records.tolist()),
            *(("%s", [_HWE_LABELS[j] for j in cut]) for cut in cuts.tolist())]


#: The sections of one row per AF bin or per sample, by their columns (printed a row at a
#: time with one printf format: not a string per field first).
_COLUMNS: dict[str, Callable[[Totals, Sequence[str]], list[Column]]] = {
    "AF": _af_columns, "PSC": _psc_columns, "PSI": _psi_columns, "HWE": _hwe_columns,
}


def stats_text(totals: Totals, sample_names: Sequence[str] = (), sections: Sequence[str] = SECTIONS,
               source: str = "") -> Iterator[str]:
    """The text of ``bcftools stats`` output for ``sections`` (bcftools' order kept), with its
    comment lines (the first naming ``source``, where bcftools names its version and command
    line); the sample sections only with ``-s``. Each section's data rows come as one string."""
    yield "# This file was produced by vcfzarr-sql stats and can be plotted using plot-vcfstats.\n"
    yield f"# The command line was:\tvcfzarr-sql stats {source}\n#\n"
    yield "# Definition of sets:\n# ID\t[2]id\t[3]tab-separated file names\n"
    yield f"ID\t0\t{source}\n"
    for section in SECTIONS:
        if section not in sections or (section in SAMPLE_SECTIONS and not totals.selected):
            continue
        yield COMMENTS[section]
        prefix = f"{section}\t0\t"
        if section in _COLUMNS:
            columns = _COLUMNS[section](totals, sample_names)
            row = prefix + "\t".join(fmt for fmt, _ in columns) + "\n"
            yield "".join(map(row.__mod__, zip(*(values for _, values in columns))))
            continue
        rows = list(map("\t".join, zip(*_section_columns(totals, section, sample_names))))
        if rows:
            yield prefix + f"\n{prefix}".join(rows) + "\n"
