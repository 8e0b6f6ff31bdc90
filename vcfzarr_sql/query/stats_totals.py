"""The counts ``bcftools stats`` keeps (``vcfstats.c``'s ``stats_t``), added up chunk by chunk.

Bins, as bcftools makes them:

* allele frequency (AF, SiS, HWE): ``m_af = max(101, samples + 1)`` bins of the ALT's
  frequency ``AC/AN`` (float32), bin 0 for singletons (AC = 1) and for records whose counts
  are unknown, ``1 + int(af * (m_af - 2))`` otherwise;
* quality (QUAL): ``1 + int(QUAL * 10)`` (float32), 0 for a missing or negative QUAL, exact up to
  10^5 then in bins of growing powers of ten (``dist.c``, :func:`quality_bin`);
* depth (DP): 0 to 500 by 1, with one bin below and one above (:func:`depth_bins`);
* indel lengths (IDD, PSI's VAF): 1 to 60, longer ones in the 60 bin;
* HWE: per AF bin, 100 bins of the fraction of heterozygous calls.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from vcfzarr_sql.format.summaries import DP_BINS, DP_MAX, DP_MIN, INDEL_VAF_BINS, MAX_INDEL

#: HWE: heterozygous-fraction bins per AF bin.
HWE_BINS = 100
#: Quality bins kept exact (``dist_init(5)``: 10^5), and the bins of each further power of ten.
QUAL_EXACT = 10**5
QUAL_LEVEL = QUAL_EXACT - 10**4

#: The per-sample counters, rows of :attr:`Totals.samples`.
SAMPLE_COUNTERS = ("hom_ref", "hom_alt", "het", "ts", "tv", "indels", "dp_sum", "dp_n",
                   "singletons", "hap_ref", "hap_alt", "missing", "ins_hets", "del_hets",
                   "ins_homs", "del_homs")
SAMPLE_ROW = {name: k for k, name in enumerate(SAMPLE_COUNTERS)}
#: Rows of :attr:`Totals.sn` (SN's counters after ``number of samples``).
SN_COUNTERS = ("records", "no-ALTs", "SNPs", "MNPs", "indels", "others", "multiallelic sites",
               "multiallelic SNP sites")


def af_bin_count(num_samples: int) -> int:
    """bcftools' ``m_af``: AF bins for a file of ``num_samples`` samples.

    >>> af_bin_count(3), af_bin_count(5000)
    (101, 5001)
    """
    return max(101, num_samples + 1)


def depth_bins(values: np.ndarray) -> np.ndarray:
    """The DP bin of each depth: 0 below 0, 1 + depth up to 500, the last bin above.

    >>> depth_bins(np.array([-5, 0, 7, 500, 501, 9999])).tolist()
    [0, 1, 8, 501, 503, 503]
    """
    return np.where(values > DP_MAX, DP_BINS - 1, np.where(values < DP_MIN, 0, 1 + values - DP_MIN))


def quality_bin(value: int) -> int:
    """The ``dist.c`` bin of a quality value (``1 + int(QUAL * 10)``).

    >>> quality_bin(305), quality_bin(QUAL_EXACT), quality_bin(123_456)
    (305, 100000, 102345)
    """
    if value <= QUAL_EXACT:
        return value
    power = int(math.log10(value))
    level = power - 5 + 1
    step = 10**level
    return QUAL_EXACT + QUAL_LEVEL * (level - 1) + int((value - 10**power) / step)


def quality_bin_start(index: int) -> int:
    """The smallest quality value of bin ``index`` (``dist_get``'s ``beg``)."""
    if index < QUAL_EXACT:
        return index
    level = (index - QUAL_EXACT) // QUAL_LEVEL + 1
    step = 10**level
    return 10 ** (level + 4) + step * (index - QUAL_EXACT - QUAL_LEVEL * (level - 1))


@dataclass
class Totals:
    """Everything the printed sections need; :meth:`add` merges one chunk's counts."""

    num_samples: int  # of the store (SN "number of samples", and m_af)
    selected: int  # samples counted (-s); 0 without -s
    sn: np.ndarray = field(init=False)
    ts_tv_alt1: np.ndarray = field(init=False)  # (2,)
    #: (4, m_af): SNPs, transitions, transversions, indels per AF bin
    af: np.ndarray = field(init=False)
    #: the QUAL values (``1 + int(QUAL * 10)``, :func:`quality_bins`) of the transitions (1st
    #: ALT), transversions (1st ALT) and indels, in blocks (binned once: :attr:`quality`)
    quality_values: tuple[list[np.ndarray], list[np.ndarray], list[np.ndarray]] = field(init=False)
    deletions: np.ndarray = field(init=False)  # (MAX_INDEL,): length - 1
    insertions: np.ndarray = field(init=False)
    substitutions: np.ndarray = field(init=False)  # (16,): ref << 2 | alt
    dp_calls: np.ndarray = field(init=False)  # (DP_BINS,)
    dp_sites: np.ndarray = field(init=False)
    vaf_n: np.ndarray = field(init=False)  # (2 * MAX_INDEL + 1,): by indel length + MAX_INDEL
    vaf_sum: np.ndarray = field(init=False)
    #: per record counted by HWE: its af bin * HWE_BINS + het bin, in blocks (:meth:`hwe_quartiles`)
    hwe_index: list[np.ndarray] = field(init=False)
    #: per biallelic record with calls: (hom ref, het, hom alt) calls of the -s samples, the
    #: report's HWE tests (blocks, in record order)
    genotype_counts: list[np.ndarray] = field(init=False)

    def __post_init__(self) -> None:
        self.m_af = af_bin_count(self.num_samples)
        self.sn = np.zeros(len(SN_COUNTERS), np.int64)
        self.ts_tv_alt1 = np.zeros(2, np.int64)
        self.af = np.zeros((4, self.m_af), np.int64)
        self.quality_values = ([], [], [])
        self.deletions = np.zeros(MAX_INDEL, np.int64)
        self.insertions = np.zeros(MAX_INDEL, np.int64)
        self.substitutions = np.zeros(16, np.int64)
        self.dp_calls = np.zeros(DP_BINS, np.int64)
        self.dp_sites = np.zeros(DP_BINS, np.int64)
        self._samples: np.ndarray | None = None
        #: per-sample counts given whole (:meth:`add_samples`), added by :meth:`add`
        self._sample_blocks: list[tuple[list[int], np.ndarray]] = []
        self.vaf_n = np.zeros(INDEL_VAF_BINS, np.int64)
        self.vaf_sum = np.zeros(INDEL_VAF_BINS, np.float64)
        self.hwe_index = []
        self.genotype_counts = []

    @property
    def samples(self) -> np.ndarray:
        """(SAMPLE_COUNTERS, selected) int64: the per-sample counters (made at first use: a
        chunk's counts given by :meth:`add_samples` make none)."""
        if self._samples is None:
            self._samples = np.zeros((len(SAMPLE_COUNTERS), self.selected), np.int64)
        return self._samples

    def add_samples(self, rows: list[int], block: np.ndarray) -> None:
        """Count ``block`` (one row per counter of :attr:`samples`, ``rows`` their indexes)
        in the per-sample counters, when these counts are added to others (:meth:`add`):
        the stored per-chunk counts of every sample (10,000 samples: 1.3 MB of counters per
        chunk that would be made, filled and added up) go straight into the totals."""
        self._sample_blocks.append((rows, block))

    def add(self, chunk: Totals) -> None:
        """Add the counts of ``chunk`` (a :class:`Totals` of the same shape) to these."""
        for name in ("sn", "ts_tv_alt1", "af", "deletions", "insertions", "substitutions",
                     "dp_calls", "dp_sites", "vaf_n", "vaf_sum"):
            getattr(self, name)[...] += getattr(chunk, name)
        if chunk._samples is not None:
            self.samples[...] += chunk._samples
        for rows, block in chunk._sample_blocks:
            samples = self.samples
            for row, values in zip(rows, block):
                np.add(samples[row], values, out=samples[row])
        for mine, theirs in zip(self.quality_values, chunk.quality_values):
            mine.extend(theirs)
        self.hwe_index.extend(chunk.hwe_index)
        self.genotype_counts.extend(chunk.genotype_counts)

    @property
    def quality(self) -> tuple[Counter[int], Counter[int], Counter[int]]:
        """Quality bin (:func:`quality_bin`) -> records, for transitions (1st ALT),
        transversions (1st ALT) and indels."""
        ts, tv, indels = (_binned(values) for values in self.quality_values)
        return ts, tv, indels

    def hwe_quartiles(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """HWE as bcftools prints it: the AF bins with records (bin 0's, singletons and
        unknown counts, in bin 1), their records, and the het bins of the 25th, 50th and 75th
        percentiles of their fractions of heterozygous calls ((3, bins): the first het bin
        whose cumulative share of the AF bin's records, in float32, reaches each).

        Computed over the distinct (AF bin, het bin) pairs, not a table of every pair (10,001
        AF bins x 100 at 10,000 samples): the share only grows at a pair with records.

        >>> t = Totals(2, 2)
        >>> t.hwe_index = [np.array([0 * 100 + 50, 1 * 100 + 10, 1 * 100 + 90, 3 * 100 + 7])]
        >>> [a.tolist() for a in t.hwe_quartiles()]
        [[1, 3], [3, 1], [[10, 7], [50, 7], [90, 7]]]
        """
        index = np.concatenate(self.hwe_index) if self.hwe_index else np.zeros(0, np.int64)
        index = np.where(index < HWE_BINS, index + HWE_BINS, index)
        pairs, counts = np.unique(index, return_counts=True)
        af = pairs // HWE_BINS
        starts = np.flatnonzero(np.r_[True, af[1:] != af[:-1]]) if len(af) else np.zeros(0, np.int64)
        records = np.add.reduceat(counts, starts) if len(af) else np.zeros(0, np.int64)
        sizes = np.diff(np.r_[starts, len(af)])
        cumulative = np.cumsum(counts)
        within = cumulative - np.repeat(cumulative[starts] - counts[starts], sizes)
        share = within.astype(np.float32) / np.repeat(records, sizes).astype(np.float32)
        cuts = []
        for q in (0.25, 0.5, 0.75):
            reached = np.flatnonzero(share >= np.float32(q))  # (each bin's last pair reaches 1)
            cuts.append(pairs[reached[np.searchsorted(reached, starts)]] % HWE_BINS)
        return af[starts], records, np.array(cuts).reshape(3, len(starts))

    def empty(self) -> Totals:
        """A :class:`Totals` of the same shape with nothing counted."""
        return Totals(self.num_samples, self.selected)


def _binned(values: list[np.ndarray]) -> Counter[int]:
    """Quality bin -> count of the QUAL values of ``values`` (blocks)."""
    found, counts = np.unique(np.concatenate(values) if values else np.zeros(0, np.int64), return_counts=True)
    binned: Counter[int] = Counter()
    for value, count in zip(found.tolist(), counts.tolist()):
        binned[quality_bin(value)] += count
    return binned
