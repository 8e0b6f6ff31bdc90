"""100 kb regions with genotypes as Arrow through SQL, against the numcodecs decode floor and
``bcftools view -r``; and which Arrow layout of ``fmt_GT`` DuckDB ingests fastest.

    python -m benchmarks.genotype_layout [--repeats 9]

On the scan benchmark's store (:func:`benchmarks.scan_floor.scan_store`: 1000 samples x
104,843 variants in 1000 x 1000 chunks), for 10 regions of 100 kb spread over the contig:

- ``floor``: the chunks the regions' records are in (``call_genotype``, ``variant_position``,
  ``variant_allele``), read and decoded with numcodecs (``VczStore.read_chunk``);
- ``SQL``: ``SELECT contig, pos, ref, alt, fmt_GT FROM vcf_zarr(store, region := R)`` to an
  Arrow table, one query per region, in a warm session (the user's path);
- ``SQL fmt_GT_1, fmt_GT_2``: the same query with the allele columns for ``fmt_GT``;
- ``scan``: the same rows from ``vcfzarr_sql.dataset(...)``'s scanner without DuckDB;
- ``bcftools ...``: one ``bcftools`` process per region on the CSI-indexed BCF of the same
  records, output to /dev/null (CPU: user + system of the children): ``view -r -Ou``
  (uncompressed BCF: records copied, genotypes never decoded), ``view -r -Ov`` (VCF text:
  every genotype decoded and formatted, as a user reading the region gets it), and ``query
  -r -f '%CHROM %POS %REF %ALT [ %GT]'`` (exactly our columns, as text). Like with like is
  ``-Ov``/``query``: both decode every call into values a program can read, as our Arrow
  rows are; ``-Ou`` is a copy of the region's bytes. The session's SQL rows pay no process
  start (bcftools does: ~1-2 ms of each run is its start and index load);
- ``duckdb <layout>``: DuckDB alone ingesting and re-exporting the same rows, already built in
  memory, with ``fmt_GT`` as ``list<list<int8>>`` (today's type), ``list<fixed_size_list<int8,
  2>>``, ``fixed_size_list<int8, 2 x samples>`` per record, one flat ``list<int8>`` per record,
  ``fmt_GT_1``/``fmt_GT_2`` lists of one allele each, and ``binary`` (the chunk's bytes).

Each runs ``repeats`` times, interleaved; the medians of CPU time (this process, all threads)
and wall time are printed with their ratio to the floor's. ``SQL`` ~ ``scan`` + ``duckdb
list<list<int8>>``: the DuckDB rows say what a change of layout would save.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import time
from collections.abc import Callable

import duckdb
import numpy as np
import pyarrow as pa

import vcfzarr_sql
from benchmarks.scan_floor import scan_store

SPAN = 100_000
REGIONS = 10
SQL = "SELECT contig, pos, ref, alt, fmt_GT FROM vcf_zarr('{store}', region := '{region}')"


def layouts(table: pa.Table, samples: int) -> dict[str, pa.Table]:
    """``table`` (contig, pos, ref, alt, fmt_GT) with ``fmt_GT`` in each layout measured."""
    gt = table.column("fmt_GT").combine_chunks()
    rows = len(gt)
    alleles = gt.flatten().flatten().fill_null(-1).to_numpy().astype(np.int8).reshape(rows, samples, 2)
    sites = table.drop_columns(["fmt_GT"])
    flat = pa.array(alleles.reshape(-1))

    def with_(name: str, *columns: tuple[str, pa.Array]) -> tuple[str, pa.Table]:
        out = sites
        for column_name, column in columns:
            out = out.append_column(column_name, column)
        return name, out

    per_call = pa.FixedSizeListArray.from_arrays(flat, 2)
    offsets = pa.array(np.arange(rows + 1, dtype=np.int32) * samples)
    flat_offsets = pa.array(np.arange(rows + 1, dtype=np.int32) * samples * 2)
    first, second = (pa.ListArray.from_arrays(offsets, pa.array(alleles[:, :, k].reshape(-1))) for k in (0, 1))
    return dict([
        ("list<list<int8>>", table),
        with_("list<fixed_size_list<int8,2>>", ("fmt_GT", pa.ListArray.from_arrays(offsets, per_call))),
        with_("fixed_size_list<int8,2n>", ("fmt_GT", pa.FixedSizeListArray.from_arrays(flat, 2 * samples))),
        with_("list<int8> (flat)", ("fmt_GT", pa.ListArray.from_arrays(flat_offsets, flat))),
        with_("fmt_GT_1, fmt_GT_2", ("fmt_GT_1", first), ("fmt_GT_2", second)),
        with_("binary", ("fmt_GT", pa.array([row.tobytes() for row in alleles], pa.binary()))),
    ])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=9)
    args = parser.parse_args(argv)
    path = scan_store()
    store = vcfzarr_sql.open_store(path)
    index = store.region_index
    first, last = int(index[:, 2].min()), int(index[:, 4].max())  # (first POS, last END of each chunk)
    starts = np.linspace(first, last - SPAN, REGIONS).astype(int)
    regions = [f"1:{s}-{s + SPAN - 1}" for s in starts]
    con = vcfzarr_sql.connect()
    samples = store.num_samples

    def sql() -> list[pa.Table]:
        return [con.sql(SQL.format(store=path, region=r)).to_arrow_table() for r in regions]

    datasets = [vcfzarr_sql.dataset(store, region=r) for r in regions]

    def scan() -> list[pa.Table]:
        return [d.scanner(columns=["contig", "pos", "ref", "alt", "fmt_GT"]).to_table() for d in datasets]

    tables = sql()
    rows = sum(t.num_rows for t in tables)
    positions = np.concatenate([t.column("pos").to_numpy() for t in tables])
    chunk_of = np.searchsorted(index[:, 2], positions, side="right") - 1  # variant chunk of each record
    chunks = sorted(set(chunk_of.tolist()))

    def floor() -> int:
        decoded = 0
        for c in chunks:
            decoded += store.read_chunk("call_genotype", (c, 0, 0)).size  # (numcodecs, no zarr)
            decoded += store.read_chunk("variant_position", (c,)).size
            decoded += store.read_chunk("variant_allele", (c, 0)).size
        return decoded

    bcf = path.parent / "sim.bcf"
    bcftools = {
        "bcftools view -r -Ou (BCF)": ["view", "-Ou"],
        "bcftools view -r -Ov (VCF text)": ["view", "-Ov"],
        "bcftools query (our columns, text)": ["query", "-f", "%CHROM\t%POS\t%REF\t%ALT[\t%GT]\n"],
    }

    def processes(argv: list[str]) -> Callable[[], None]:
        def run() -> None:
            for r in regions:
                subprocess.run(["bcftools", argv[0], "-r", r, *argv[1:], str(bcf)], check=True,
                               stdout=subprocess.DEVNULL)
        return run

    ddb = duckdb.connect()
    def sql_alleles() -> list[pa.Table]:
        alleles = SQL.replace("fmt_GT", "fmt_GT_1, fmt_GT_2")
        return [con.sql(alleles.format(store=path, region=r)).to_arrow_table() for r in regions]

    runs: dict[str, Callable[[], object]] = {"floor": floor, "SQL": sql, "SQL fmt_GT_1, fmt_GT_2": sql_alleles,
                                             "scan": scan}
    runs.update((name, processes(argv)) for name, argv in bcftools.items())
    for k, (name, table) in enumerate(layouts(pa.concat_tables(tables), samples).items()):
        ddb.register(f"layout_{k}", table)
        runs[f"duckdb {name}"] = (lambda v: lambda: ddb.sql(f"SELECT * FROM {v}").to_arrow_table())(f"layout_{k}")
    print(f"{len(regions)} regions of {SPAN // 1000} kb: {rows} records x {samples} samples, "
          f"{len(chunks)} variant chunks")
    cpu: dict[str, list[float]] = {name: [] for name in runs}
    wall: dict[str, list[float]] = {name: [] for name in runs}
    for run in runs.values():
        run()  # warm
    names = list(runs)
    for repeat in range(args.repeats):
        for name in names[repeat % len(names):] + names[: repeat % len(names)]:  # (rotated)
            c, w = _cpu(), time.perf_counter()
            runs[name]()
            cpu[name].append(_cpu() - c)
            wall[name].append(time.perf_counter() - w)
    fc, fw = statistics.median(cpu["floor"]), statistics.median(wall["floor"])
    sc, sw = statistics.median(cpu["SQL"]), statistics.median(wall["SQL"])
    print(f"{'':38s} {'CPU ms':>8s} {'wall ms':>8s}   {'/ floor (CPU, wall)':>20s}   SQL / this (CPU, wall)")
    for name in runs:
        c, w = statistics.median(cpu[name]), statistics.median(wall[name])
        print(f"{name:38s} {c * 1000:8.1f} {w * 1000:8.1f}   {c / fc:8.2f}x {w / fw:8.2f}x   "
              f"{sc / c:8.2f}x {sw / w:8.2f}x")


def _cpu() -> float:
    """CPU seconds (user + system) of this process, all threads, and of its finished children."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


if __name__ == "__main__":
    main()
