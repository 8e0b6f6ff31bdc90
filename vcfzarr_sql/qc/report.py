"""The QC report: the plots ``plot-vcfstats`` draws from ``bcftools stats`` output, plus the
per-sample call rate against heterozygosity and a Q-Q plot of HWE p-values, as one
self-contained HTML page (each plot a base64 PNG inside it) with the PNGs beside it.

Drawn with matplotlib (the ``report`` extra), imported here only: the rest of the package never
needs it. Every plot has a title and labelled axes; the page repeats them (each ``<img>``'s
``alt`` and ``data-xlabel``/``data-ylabel``, and its caption) so that they can be checked
without reading pixels.
"""

from __future__ import annotations

import base64
import html
import io
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from vcfzarr_sql.errors import QueryError
from vcfzarr_sql.qc.collect import Counted
from vcfzarr_sql.query.hwe import hwe_tests
from vcfzarr_sql.query.stats_totals import DP_BINS, HWE_BINS, MAX_INDEL, SAMPLE_ROW, SN_COUNTERS, Totals


@dataclass(frozen=True)
class Plot:
    """One figure of the report: its file name stem, title, axis labels and caption."""

    name: str
    title: str
    xlabel: str
    ylabel: str
    caption: str
    draw: Callable[[Any, Totals, Counted], None]


def _af_axis(totals: Totals) -> np.ndarray:
    return (np.arange(totals.m_af) - 1) / (totals.m_af - 1)


def _counts(ax: Any, totals: Totals, counted: Counted) -> None:
    labels = ["SNPs", "MNPs", "indels", "others", "multiallelic", "no-ALTs"]
    rows = [SN_COUNTERS.index(n) for n in ("SNPs", "MNPs", "indels", "others", "multiallelic sites", "no-ALTs")]
    ax.bar(labels, totals.sn[rows], color="#4878a8")
    ts, tv = int(totals.af[1].sum()), int(totals.af[2].sum())
    ax.text(0.98, 0.95, f"ts/tv = {ts / tv:.2f}" if tv else "ts/tv: no transversion",
            transform=ax.transAxes, ha="right", va="top")


def _substitutions(ax: Any, totals: Totals, counted: Counted) -> None:
    bases = "ACGT"
    kinds = [(t, f"{bases[t >> 2]}>{bases[t & 3]}") for t in range(16) if t >> 2 != t & 3]
    colours = ["#d1603d" if abs((t >> 2) - (t & 3)) == 2 else "#4878a8" for t, _ in kinds]
    ax.bar([k for _, k in kinds], [totals.substitutions[t] for t, _ in kinds], color=colours)
    ax.tick_params(axis="x", rotation=90)


def _af_counts(totals: Totals, rows: tuple[int, ...], bins: int) -> tuple[np.ndarray, np.ndarray]:
    """(bin centres, counts per row) of the AF bins (singletons in the first), joined into at
    most ``bins`` bins of equal width (a cohort of thousands has as many AF bins)."""
    af = totals.af[list(rows)].copy()
    af[:, 1] += af[:, 0]
    x = _af_axis(totals)[1:]
    edges = np.linspace(0, 1, min(bins, len(x)) + 1)
    counts = np.stack([np.histogram(x, edges, weights=row[1:])[0] for row in af])
    return (edges[:-1] + edges[1:]) / 2, counts


def _af_spectrum(ax: Any, totals: Totals, counted: Counted) -> None:
    x, (snps, indels) = _af_counts(totals, (0, 3), 100)
    ax.plot(x, np.maximum(snps, 0.5), label="SNPs", drawstyle="steps-mid")
    ax.plot(x, np.maximum(indels, 0.5), label="indels", drawstyle="steps-mid")
    ax.set_yscale("log")
    ax.legend()


def _tstv_by_af(ax: Any, totals: Totals, counted: Counted) -> None:
    x, (ts, tv) = _af_counts(totals, (1, 2), 20)
    keep = tv > 0
    ax.plot(x[keep], ts[keep] / tv[keep], marker="o", linestyle="-")


def _quality(ax: Any, totals: Totals, counted: Counted) -> None:
    from vcfzarr_sql.query.stats_totals import quality_bin_start

    ts, tv, indels = totals.quality
    for label, counts in (("SNPs (1st ALT)", ts + tv), ("indels", indels)):
        bins = sorted(counts)
        x = [0.1 * (quality_bin_start(b) - 1) if b else -1 for b in bins]
        ax.plot(x, np.cumsum([counts[b] for b in bins]), label=label, marker=".", drawstyle="steps-post")
    ax.legend()


def _indels(ax: Any, totals: Totals, counted: Counted) -> None:
    lengths = np.r_[-np.arange(MAX_INDEL, 0, -1), np.arange(1, MAX_INDEL + 1)]
    counts = np.r_[totals.deletions[::-1], totals.insertions]
    ax.bar(lengths, counts, color=np.where(lengths < 0, "#d1603d", "#4878a8"))


def _depth(ax: Any, totals: Totals, counted: Counted) -> None:
    x = np.arange(DP_BINS) - 1  # (the first bin: below 0; the last: above 500)
    x[-1] = DP_BINS - 2
    for label, counts in (("genotypes", totals.dp_calls), ("sites", totals.dp_sites)):
        if counts.sum():
            used = np.flatnonzero(counts)
            ax.plot(x[used[0] : used[-1] + 1], 100 * counts[used[0] : used[-1] + 1] / counts.sum(),
                    label=label, marker=".", markersize=3)
    ax.legend()


def _per_sample(ax: Any, totals: Totals, counted: Counted) -> None:
    s = totals.samples
    x = np.arange(s.shape[1])
    for label, row in (("hets", "het"), ("non-ref homs", "hom_alt"), ("singletons", "singletons"),
                       ("indels", "indels"), ("missing", "missing")):
        ax.plot(x, s[SAMPLE_ROW[row]], marker=".", linestyle="", label=label)
    ax.legend()


def _hwe(ax: Any, totals: Totals, counted: Counted) -> None:
    rows, _, cuts = totals.hwe_quartiles()
    quartiles = cuts / HWE_BINS
    x = _af_axis(totals)[rows]
    ax.fill_between(x, quartiles[0], quartiles[2], alpha=0.3, label="25th-75th percentile")
    ax.plot(x, quartiles[1], label="median")
    ax.legend()


def call_rates(totals: Totals) -> tuple[np.ndarray, np.ndarray]:
    """Per ``-s`` sample: call rate (1 - missing / records) and heterozygosity (hets / diploid
    SNP calls), NaN where undefined."""
    s = totals.samples
    records = int(totals.sn[0])
    diploid = s[SAMPLE_ROW["hom_ref"]] + s[SAMPLE_ROW["hom_alt"]] + s[SAMPLE_ROW["het"]]
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = 1 - s[SAMPLE_ROW["missing"]] / records if records else np.full(s.shape[1], np.nan)
        het = s[SAMPLE_ROW["het"]] / diploid
    return rate, het


def _call_rate_het(ax: Any, totals: Totals, counted: Counted) -> None:
    rate, het = call_rates(totals)
    ax.scatter(het, rate, s=12)


def hwe_p_values(totals: Totals) -> np.ndarray:
    """The exact HWE p-values (bcftools +fill-tags' HWE) of the biallelic records, over the
    ``-s`` samples' diploid calls."""
    if not totals.genotype_counts:
        return np.zeros(0)
    counts = np.concatenate(totals.genotype_counts).astype(np.int64)
    hom_ref, het, hom_alt = counts.T
    p, _ = hwe_tests(2 * hom_ref + het, 2 * hom_alt + het, het)
    return p[~np.isnan(p)]


def _hwe_qq(ax: Any, totals: Totals, counted: Counted) -> None:
    p = np.sort(hwe_p_values(totals))
    if len(p):
        expected = -np.log10((np.arange(1, len(p) + 1) - 0.5) / len(p))
        observed = -np.log10(np.maximum(p, 1e-300))
        ax.scatter(expected, observed, s=8)
        top = max(expected.max(), 1.0)
        ax.plot([0, top], [0, top], color="grey", linewidth=1)


SITE_PLOTS = (
    Plot("counts", "Sites by type", "variant type", "number of records",
         "Records by type (SN), with the transition/transversion ratio (TSTV).", _counts),
    Plot("substitutions", "Substitution types", "substitution (REF>ALT)", "number of SNPs",
         "SNPs by substitution (ST): transitions red, transversions blue.", _substitutions),
    Plot("af_spectrum", "Allele frequency spectrum", "non-reference allele frequency",
         "number of sites (log scale)",
         "SNPs and indels by non-reference allele frequency (AF; at most 100 bins, singletons in the first).",
         _af_spectrum),
    Plot("tstv_by_af", "Ts/Tv by allele frequency", "non-reference allele frequency",
         "transitions / transversions", "Transition/transversion ratio by AF (AF, in 20 bins).", _tstv_by_af),
    Plot("quality", "Quality", "QUAL", "number of sites (cumulative)",
         "Cumulative SNPs (1st ALT) and indels by quality (QUAL).", _quality),
    Plot("indels", "Indel lengths", "indel length (deletions negative)", "number of sites",
         "Indels by length (IDD): deletions red, insertions blue.", _indels),
    Plot("depth", "Depth", "depth (DP)", "fraction (%)",
         "Distribution of FORMAT/DP over genotypes and INFO/DP over sites (DP; 501: above 500).", _depth),
)
SAMPLE_PLOTS = (
    Plot("per_sample", "Per-sample counts", "sample (in -s order)", "number of calls",
         "Per-sample heterozygous, non-reference homozygous, singleton, indel and missing calls (PSC).",
         _per_sample),
    Plot("hwe", "Heterozygosity by allele frequency", "1st ALT allele frequency",
         "fraction of heterozygous calls", "Median and quartiles of the fraction of heterozygous calls per site, by AF (HWE).",
         _hwe),
    Plot("call_rate_het", "Call rate and heterozygosity", "heterozygosity (hets / diploid SNP calls)",
         "call rate", "Per sample: call rate against heterozygosity, the plot sample QC is done with.",
         _call_rate_het),
    Plot("hwe_qq", "HWE Q-Q plot", "expected -log10(p)", "observed -log10(p)",
         "Exact Hardy-Weinberg test p-values of the biallelic sites against the uniform distribution.",
         _hwe_qq),
)


def _png(plot: Plot, counted: Counted) -> bytes:
    from matplotlib.figure import Figure

    figure = Figure(figsize=(6.4, 4.0), dpi=100, layout="constrained")
    ax = figure.add_subplot()
    plot.draw(ax, counted.totals, counted)
    ax.set_title(plot.title)
    ax.set_xlabel(plot.xlabel)
    ax.set_ylabel(plot.ylabel)
    out = io.BytesIO()
    figure.savefig(out, format="png")
    return out.getvalue()


def plots(counted: Counted) -> Iterator[tuple[Plot, bytes]]:
    """Each plot of the report with its PNG: the site plots, and with ``-s`` the sample ones."""
    chosen = SITE_PLOTS + (SAMPLE_PLOTS if counted.totals.selected else ())
    for plot in chosen:
        yield plot, _png(plot, counted)


def _figure_html(plot: Plot, png: bytes) -> str:
    data = base64.b64encode(png).decode()
    alt = f"{plot.title}: x = {plot.xlabel}, y = {plot.ylabel}"
    return (f'<figure id="{plot.name}"><img src="data:image/png;base64,{data}" '
            f'alt="{html.escape(alt)}" data-xlabel="{html.escape(plot.xlabel)}" '
            f'data-ylabel="{html.escape(plot.ylabel)}" width="640" height="400">'
            f"<figcaption>{html.escape(plot.caption)}</figcaption></figure>")


def report_html(counted: Counted, title: str, figures: list[tuple[Plot, bytes]]) -> str:
    """The page: a summary table and every figure inline."""
    totals = counted.totals
    rows = "".join(f"<tr><th>{html.escape(n)}</th><td>{v}</td></tr>"
                   for n, v in zip(("samples", *SN_COUNTERS), (totals.num_samples, *totals.sn.tolist())))
    body = "\n".join(_figure_html(plot, png) for plot, png in figures)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>QC report: {html.escape(title)}</title>
<style>body{{font-family:sans-serif;margin:2em;max-width:1400px}}
main{{display:flex;flex-wrap:wrap;gap:1em}}figure{{margin:0;width:640px}}
figcaption{{font-size:90%;color:#444}}table{{border-collapse:collapse}}
th,td{{padding:2px 8px;text-align:left;border-bottom:1px solid #ddd}}</style></head>
<body><h1>QC report: {html.escape(title)}</h1>
<p>bcftools stats numbers and plot-vcfstats plots by vcfzarr-sql stats
({totals.selected} samples in the per-sample plots).</p>
<table>{rows}</table>
<main>
{body}
</main></body></html>
"""


def write_report(counted: Counted, output: str | os.PathLike | None, plot_dir: str | os.PathLike | None,
                 title: str = "") -> Path:
    """Write the report: ``output`` (an HTML file; its PNGs beside it, named after it) or
    ``plot_dir/report.html`` (its PNGs in ``plot_dir``). Returns the HTML file's path."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise QueryError("the report needs matplotlib: pip install 'vcfzarr-sql[report]'") from None
    if output is not None:
        page = Path(output)
        prefix = page.with_suffix("").name + "-"
    elif plot_dir is not None:
        page = Path(plot_dir) / "report.html"
        prefix = ""
    else:
        raise QueryError("the report needs --plot DIR or -o FILE.html")
    page.parent.mkdir(parents=True, exist_ok=True)
    figures = list(plots(counted))
    for plot, png in figures:
        (page.parent / f"{prefix}{plot.name}.png").write_bytes(png)
    page.write_text(report_html(counted, title, figures))
    return page
