"""A query's result as the server sends it: a command tag, or rows read batch by batch.

Rows stay in DuckDB until a client asks for them: :class:`RowStream` pulls Arrow record
batches from DuckDB's reader and hands them out up to a row limit (``Execute`` with a row
count), so a billion-row result never sits in memory.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import pyarrow as pa

from vcfzarr_sql.serve.pg.copy_out import CopyOut
from vcfzarr_sql.serve.pg.labels import postgres_labels
from vcfzarr_sql.serve.pg.rows import WireValues, wire_values
from vcfzarr_sql.serve.pg.sqlstate import PgError
from vcfzarr_sql.serve.pg.types import ColumnCodec, PgType, column_codec


class RowStream:
    """The rows of one result, taken in order; ``columns`` describes them (labelled as
    PostgreSQL labels the result of ``sql``, when it is given: :func:`postgres_labels`)."""

    def __init__(self, reader: pa.RecordBatchReader, sql: str | None = None):
        self._reader: pa.RecordBatchReader | None = reader
        self._batches: Iterator[pa.RecordBatch] = iter(reader)
        self._pending: pa.RecordBatch | None = None
        #: Bytes of rows read from DuckDB ahead of the client (by :meth:`detach`).
        self.held_bytes = 0
        self.schema = reader.schema
        self.labels = self.schema.names if sql is None else postgres_labels(self.schema.names, sql)
        self.codecs: list[ColumnCodec] = [column_codec(field.type) for field in self.schema]
        self.formats: list[int] = [0] * len(self.codecs)
        self.wire: list[WireValues] = [wire_values(codec, field.type, False)
                                       for codec, field in zip(self.codecs, self.schema)]

    def use_formats(self, codes: Sequence[int]) -> None:
        """Bind's result format codes (0 text, 1 binary): none (all text), one for every
        column, or one per column."""
        if len(codes) == 1:
            codes = list(codes) * len(self.codecs)
        if codes and len(codes) != len(self.codecs):
            raise PgError("08P01", f"{len(codes)} result formats for {len(self.codecs)} columns")
        self.formats = list(codes) or [0] * len(self.codecs)
        self.wire = [wire_values(codec, field.type, bool(code))
                     for code, codec, field in zip(self.formats, self.codecs, self.schema)]

    @property
    def columns(self) -> list[tuple[str, PgType, int]]:
        """(name, PostgreSQL type, format code) of each column."""
        return [(label, codec.pg_type, code)
                for label, codec, code in zip(self.labels, self.codecs, self.formats)]

    def _next(self) -> pa.RecordBatch | None:
        if self._pending is not None:
            batch, self._pending = self._pending, None
            return batch
        try:
            for batch in self._batches:
                if batch.num_rows:
                    return batch
        except OSError as err:  # DuckDB's error while streaming, as pyarrow's reader raises it
            self.close()
            message = str(err).strip().splitlines()[0]
            raise PgError("57014" if "INTERRUPT" in message else "XX000", message) from None
        self.close()
        return None

    def take(self, limit: int = 0) -> Iterator[pa.RecordBatch]:
        """Batches of the next ``limit`` rows (all that are left when ``limit`` is 0)."""
        remaining = limit or -1
        while remaining:
            batch = self._next()
            if batch is None:
                return
            if 0 < remaining < batch.num_rows:
                batch, self._pending = batch.slice(0, remaining), batch.slice(remaining)
            remaining -= batch.num_rows
            yield batch

    @property
    def exhausted(self) -> bool:
        """Whether every row was taken (reads ahead one batch to know)."""
        if self._pending is None:
            self._pending = self._next()
        return self._pending is None

    def detach(self, max_bytes: int) -> None:
        """Read the rest of the result into memory, freeing DuckDB for other queries.

        When the rest is more than ``max_bytes``, PgError 54000: what was read stays ahead
        of the rows still streaming, so the client may fetch them or close the cursor.
        """
        if self._reader is None:
            return
        rest: list[pa.RecordBatch] = []
        for batch in self._batches:
            rest.append(batch)
            self.held_bytes += batch.nbytes
            if self.held_bytes > max_bytes:
                self._batches = itertools.chain(rest, self._batches)
                raise PgError("54000", f"an open cursor holds more than {max_bytes >> 20} MB of rows "
                                       f"not fetched yet: fetch them or close it first")
        self.close()
        self._batches = iter(rest)

    def close(self) -> None:
        if self._reader is not None:
            self._reader.close()
            self._reader = None
            self._batches = iter(())


@dataclass
class Result:
    """What one statement gave: rows to stream, or just a command tag; rows to send as
    ``copy`` says (a ``COPY ... TO STDOUT``)."""

    tag: str
    rows: RowStream | None = None
    copy: CopyOut | None = None
