"""One ``bcftools stats`` section as an Arrow table: ``vcf_zarr_stats(...)`` in SQL.

The columns are the section's fields after its name and id, named as bcftools' comment line
names them (``ts/tv (1st ALT)`` -> ``ts_tv_1st_alt``), each of one type whatever the store
(:data:`COLUMN_TYPES`): BIGINT or DOUBLE, VARCHAR where bcftools may print text (QUAL's ``.``
bin, IDD's ``.`` VAF, DP's ``<0`` and ``>500``).

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


_I, _F, _S = pa.int64(), pa.float64(), pa.string()
#: Each section's column types, in :func:`column_names`' order.
COLUMN_TYPES = {
    "SN": [_S, _I], "TSTV": [_I, _I, _F, _I, _I, _F], "SiS": [_I] * 8, "AF": [_F] + [_I] * 7,
    "QUAL": [_S, _I, _I, _I, _I], "IDD": [_I, _I, _I, _S], "ST": [_S, _I],
    "DP": [_S, _I, _F, _I, _F], "PSC": [_S] + [_I] * 6 + [_F] + [_I] * 4,
    "PSI": [_S, _I, _I, _I, _F, _I, _I, _I, _I], "HWE": [_F, _I, _F, _F, _F],
}


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
    return pa.table({name: pc.cast(pa.array(values, _S), kind)
                     for name, values, kind in zip(names, columns, COLUMN_TYPES[section], strict=True)})
