"""``COPY (query) TO 'file.parquet'`` over the table functions, written by pyarrow's Parquet
writer from DuckDB's Arrow stream, a row group at a time.

DuckDB's own writer builds each row group of ``ROW_GROUP_SIZE`` rows (122,880) in memory,
and a row of 1,000 samples' genotypes takes it about 115 KB: the COPY of a 1,000 x 104,843
store peaked at 8.9 GiB RSS (1.6 GiB with ``ROW_GROUP_SIZE 2048``, its smallest). Here a row
group ends at :data:`ROW_GROUP_BYTES` of Arrow data (or 122,880 rows), so memory stays near
one row group whatever the number of samples.

Only the plain form is taken (the file a local path ending ``.parquet``, options among
``FORMAT parquet``, ``COMPRESSION``/``CODEC`` and ``ROW_GROUP_SIZE``), and only where DuckDB
may write local files (``enable_external_access``: never on a server); anything else is
DuckDB's, as before.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

import duckdb

#: Arrow bytes of one row group, at most (DuckDB's rows per row group, at most).
ROW_GROUP_BYTES = 64 << 20
ROW_GROUP_ROWS = 122_880
#: rows of each batch read from DuckDB
BATCH_ROWS = 2048

_COPY = re.compile(
    r"\s*COPY\s*\((?P<query>.*)\)\s*TO\s*'(?P<file>[^']*\.parquet)'\s*"
    r"(?:(?:WITH\s*)?\((?P<options>[^()'\"]*)\))?\s*;?\s*", re.IGNORECASE | re.DOTALL)
_OPTION = re.compile(r"\s*(\w+)\s+(?:'(\w+)'|(\w+))\s*")
Reply = TypeVar("Reply")
_CODECS = {"snappy": "snappy", "zstd": "zstd", "gzip": "gzip", "brotli": "brotli", "lz4": "lz4",
           "lz4_raw": "lz4", "uncompressed": "none"}


@dataclass(frozen=True)
class ParquetCopy:
    """A ``COPY (query) TO 'file.parquet'`` statement taken apart."""

    query: str
    file: str
    compression: str = "snappy"
    row_group_rows: int = ROW_GROUP_ROWS


def parquet_copy(sql: str) -> ParquetCopy | None:
    """The plain Parquet COPY ``sql`` is, or None.

    >>> parquet_copy("COPY (SELECT * FROM v) TO 'out.parquet' (FORMAT parquet, COMPRESSION zstd)")
    ParquetCopy(query='SELECT * FROM v', file='out.parquet', compression='zstd', row_group_rows=122880)
    >>> parquet_copy("COPY (SELECT 1) TO 'out.parquet' (PARTITION_BY (x))") is None
    True
    >>> parquet_copy("COPY (SELECT 1) TO '~/out.parquet'") is None
    True
    """
    found = _COPY.fullmatch(sql)
    if found is None or not _balanced(found["query"]) or found["file"].startswith("~") or \
            "://" in found["file"]:
        return None  # (DuckDB expands ~ and writes to URLs: its own)
    copy = ParquetCopy(found["query"].strip(), found["file"])
    for option in filter(str.strip, (found["options"] or "").split(",")):
        pair = _OPTION.fullmatch(option)
        if pair is None:
            return None
        name, value = pair[1].lower(), (pair[2] or pair[3]).lower()
        if name == "format" and value == "parquet":
            continue
        if name in ("compression", "codec") and value in _CODECS:
            copy = ParquetCopy(copy.query, copy.file, _CODECS[value], copy.row_group_rows)
        elif name == "row_group_size" and value.isdigit() and int(value) > 0:
            copy = ParquetCopy(copy.query, copy.file, copy.compression, int(value))
        else:
            return None
    return copy


def _balanced(query: str) -> bool:
    """Whether ``query`` is one parenthesised whole (its strings aside): ``(a) TO 'x' (b)`` is not."""
    depth = 0
    for k, part in enumerate(query.split("'")):
        if k % 2:
            continue
        for char in part:
            depth += {"(": 1, ")": -1}.get(char, 0)
            if depth < 0:
                return False
    return depth == 0 and query.count("'") % 2 == 0


def may_write_files(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether DuckDB would write a local file for this connection."""
    [(external, disabled)] = con.sql("SELECT current_setting('enable_external_access'), "
                                     "current_setting('disabled_filesystems')").fetchall()
    return bool(external) and "LocalFileSystem" not in str(disabled or "")


def run(con: duckdb.DuckDBPyConnection, copy: ParquetCopy, parameters: object,
        reply: Callable[[str], Reply]) -> Reply:
    """Write ``copy``'s rows (``parameters``: the query's); ``reply`` runs a COPY of as many
    rows into the file first (DuckDB's own check that it may write there, and its reply: a
    ``Count`` of the rows written), which they then replace."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    relation = con.sql(copy.query) if parameters is None else con.sql(copy.query, params=parameters)
    reader = relation.to_arrow_reader(BATCH_ROWS)
    part = f"{copy.file}.{os.getpid()}.part"
    rows = 0
    try:
        with pq.ParquetWriter(part, reader.schema, compression=copy.compression) as writer:
            pending: list[pa.RecordBatch] = []
            pending_rows = pending_bytes = 0
            for batch in reader:
                pending.append(batch)
                pending_rows += batch.num_rows
                pending_bytes += batch.nbytes
                if pending_bytes >= ROW_GROUP_BYTES or pending_rows >= copy.row_group_rows:
                    writer.write_table(pa.Table.from_batches(pending, reader.schema), row_group_size=pending_rows)
                    rows += pending_rows
                    pending, pending_rows, pending_bytes = [], 0, 0
            if pending or not rows:
                writer.write_table(pa.Table.from_batches(pending, reader.schema), row_group_size=max(pending_rows, 1))
                rows += pending_rows
        status = reply(f"COPY (SELECT NULL FROM range({rows})) TO '{copy.file}' (FORMAT parquet)")
        os.replace(part, copy.file)
    finally:
        if os.path.exists(part):
            os.unlink(part)
    return status
