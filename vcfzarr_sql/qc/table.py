"""One ``bcftools stats`` section as an Arrow table: ``vcf_zarr_stats(...)`` in SQL.

The columns are the section's fields after its name and id, named as bcftools' comment line
names them (``ts/tv (1st ALT)`` -> ``ts_tv_1st_alt``), typed BIGINT or DOUBLE where every
value is a number, else VARCHAR (QUAL's ``.`` bin, DP's ``<0`` and ``>500``).

>>> column_names("TSTV")
['ts', 'tv', 'ts_tv', 'ts_1st_alt', 'tv_1st_alt', 'ts_tv_1st_alt']
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc

from vcfzarr_sql.errors import QueryError
from vcfzarr_sql.qc.collect import collect
from vcfzarr_sql.qc.text import COMMENTS, SECTIONS, section_rows
from vcfzarr_sql.query.selection import Selection
from vcfzarr_sql.store.vcz import VczStore


def column_names(section: str) -> list[str]:
    """The names of a section's fields after ``[2]id``, from bcftools' comment line."""
    header = COMMENTS[section].rstrip("\n").split("\n")[-1]
    names = [re.sub(r"^\[\d+\]", "", field) for field in header.split("\t")[2:]]
    return [re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_") for name in names]


def _typed(values: list[str]) -> pa.Array:
    array = pa.array(values, pa.string())
    for kind in (pa.int64(), pa.float64()):
        try:
            return pc.cast(array, kind)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            continue
    return array


def stats_table(store: VczStore, section: str = "SN", region: str | None = None,
                samples: Sequence[str] | None = None) -> pa.Table:
    """The rows of ``section`` over the records of ``region`` (a bcftools ``-r`` string; None:
    all); the per-sample sections (PSC, PSI, HWE) and the genotype columns of the others
    count ``samples`` (None: every sample, bcftools ``-s -``)."""
    if section not in SECTIONS:
        raise QueryError(f"vcf_zarr_stats(): unknown section {section!r}: expected one of {', '.join(SECTIONS)}")
    selection = Selection(regions=region, samples="-" if samples is None else ",".join(samples))
    counted = collect(store, selection)
    rows = section_rows(counted.totals, section, counted.sample_names)
    names = column_names(section)
    columns = [[row[2 + k] for row in rows] for k in range(len(names))]
    return pa.table({name: _typed(values) for name, values in zip(names, columns)})
