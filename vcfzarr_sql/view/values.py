"""Stored values -> VCF text, the way htslib prints them.

Integers print as decimals, floats as htslib's ``kputd`` does (six significant digits, ties
rounded up: :func:`float_text`), missing values as ``.``; fill (padding) values end a vector
and never print.
Formatting is vectorised: each distinct stored value is formatted once, into a table of
texts; cells are codes into the tables (:class:`Cells`), gathered as uint8 rows, NUL-padded,
into a chunk's text, and the padding is dropped when the text is joined.

>>> import numpy as np
>>> cells(np.array([[1, -1], [3, -2], [-1, -2]], dtype=np.int8), "Integer").tolist()
['1,.', '3', '.']
>>> cells(np.array([0.5, 1e-5, 1234567.0, -0.0], dtype=np.float32), "Float").tolist()
['0.5', '1e-05', '1.23457e+06', '-0']
"""

from __future__ import annotations

import abc
import functools
import math
from dataclasses import dataclass

import numpy as np

from vcfzarr_sql.format import spec
from vcfzarr_sql.query.selection.rows import flags

MISSING = "."


#: (bound, offset): htslib's rounding offset of ``d * 1e10`` for ``d`` below each bound
#: (:func:`float_text`, :func:`float_text_sql`)
ROUNDING = ((0.001, 5), (0.01, 50), (0.1, 500), (1.0, 5000), (10.0, 50000), (100.0, 500000),
             (1000.0, 5000000), (10000.0, 50000000), (100000.0, 500000000), (math.inf, 5000000000))


def float_text(value: float) -> str:
    """One float as htslib 1.16's ``kputd`` prints it: ``%g`` outside [1e-4, 999999];
    inside, ``d * 1e10`` truncated to an integer, plus half a unit of the sixth significant
    digit, cut to six digits: a tie rounds up (``%g`` rounds it to even), and so may a value
    a little below a tie whose product rounds up.

    >>> [float_text(v) for v in (117756.5, 2.5, 0.5, 1.0000005, 1234565.0, 999999.5, -0.0, 1e-05)]
    ['117757', '2.5', '0.5', '1', '1.23456e+06', '1e+06', '-0', '1e-05']
    """
    return float_texts(np.array([value]))[0].decode()


def _outside_text(value: float) -> bytes:
    """:func:`float_text` of a value outside [1e-4, 999999] (``%g``), zero or NaN."""
    if value == 0:
        return b"-0" if math.copysign(1.0, value) < 0 else b"0"
    if math.isnan(value):
        return b"-nan" if math.copysign(1.0, value) < 0 else b"nan"
    return (("-" if value < 0 else "") + f"{abs(value):g}").encode()


#: powers of ten that fit an int64, and :data:`ROUNDING` as arrays (:func:`float_texts`)
_POWERS = 10 ** np.arange(19, dtype=np.int64)
_BOUNDS = np.array([bound for bound, _ in ROUNDING[:-1]])
_OFFSETS = np.array([offset for _, offset in ROUNDING], dtype=np.int64)


def float_texts(values: np.ndarray) -> list[bytes]:
    """:func:`float_text` of each of ``values`` (a 1-d float array), as ASCII: the values in
    [1e-4, 999999] through htslib's steps on all of them at once (``d * 1e10`` truncated plus
    the offset, its six leading digits, the point placed, trailing zeros dropped), the others
    one by one.

    >>> float_texts(np.array([117756.5, 2.5, -0.5, 1.0000005, 1e-4, 999999.0, 0.00123456789, 120.0, 1e-5, 0.0]))
    [b'117757', b'2.5', b'-0.5', b'1', b'0.0001', b'999999', b'0.00123457', b'120', b'1e-05', b'0']
    """
    values = np.asarray(values, dtype=np.float64).reshape(-1)
    size = np.abs(values)
    inside = (size >= 0.0001) & (size <= 999999)  # (NaN: outside)
    texts = np.empty(len(values), object)
    texts[~inside] = [_outside_text(v) for v in values[~inside].tolist()]
    if not inside.any():
        return texts.tolist()
    size = size[inside]
    number = np.trunc(size * 1e10).astype(np.int64) + _OFFSETS[np.searchsorted(_BOUNDS, size, side="right")]
    whole = np.searchsorted(_POWERS, number, side="right") - 10  # digits before the point: -3 to 6
    top = number // _POWERS[whole + 4]  # the six leading digits (the first is not 0)
    digits = top[:, None] // _POWERS[5::-1] % 10
    zeros = sum((top % _POWERS[k] == 0).astype(np.int64) for k in range(1, 6))  # trailing zeros of the six
    # what is written: sign, "0." and up to 3 zeros (no whole digit), then each digit, a point after the
    # whole digits when a fraction digit is left; then the kept characters moved to the front
    kept_digits = np.where(whole >= 6, 6, np.maximum(np.maximum(whole, 0), 6 - zeros))
    fraction = (whole < 6) & (kept_digits > np.maximum(whole, 0))
    chars = np.zeros((len(size), 17), np.uint8)
    keep = np.zeros((len(size), 17), bool)
    chars[:, 0], keep[:, 0] = ord("-"), values[inside] < 0
    chars[:, 1:3], keep[:, 1:3] = np.frombuffer(b"0.", np.uint8), (whole <= 0)[:, None]
    chars[:, 3:6], keep[:, 3:6] = ord("0"), np.arange(3) < -whole[:, None]
    chars[:, 6::2] = digits + ord("0")
    keep[:, 6::2] = np.arange(6) < kept_digits[:, None]
    chars[:, 7::2] = ord(".")
    keep[:, 7::2] = fraction[:, None] & (np.arange(1, 6) == whole[:, None])
    packed = np.zeros(chars.size, np.uint8)
    at = np.flatnonzero(keep)  # (each kept character to its row's next free byte)
    packed[at - at % 17 + np.cumsum(keep, axis=1).reshape(-1)[at] - 1] = chars.reshape(-1)[at]
    texts[inside] = packed.view("S17")
    return texts.tolist()


def float_text_sql(x: str) -> str:
    """:func:`float_text` as a DuckDB SQL expression of the FLOAT (or DOUBLE) expression ``x``
    (a name: it is repeated), for text DuckDB writes itself (``query -f csv``): the same steps
    in SQL, several times faster than a Python function over the values (tests check that the
    two agree).

    >>> import duckdb
    >>> duckdb.sql(f"SELECT {float_text_sql('x')} FROM (SELECT unnest([117756.5, 2, 1e20, 0.1]::FLOAT[]) AS x)").fetchall()
    [('117757',), ('2',), ('1e+20',), ('0.1',)]

    A negative zero is ``-0``, as htslib (and :func:`float_text`) prints it; the SQL literal
    ``(-0.0)`` is a DECIMAL, whose zero has no sign (``-0.0::FLOAT`` negates a FLOAT zero):

    >>> duckdb.sql(f"SELECT {float_text_sql('x')} FROM (SELECT unnest([-0.0::FLOAT, (-0.0)::FLOAT]) AS x)").fetchall()
    [('-0',), ('0',)]
    """
    d = f"abs({x}::DOUBLE)"
    offset = "CASE " + " ".join(f"WHEN {d} < {bound} THEN {offset}" for bound, offset in ROUNDING[:-1])
    digits = f"(trunc({d} * 1e10)::BIGINT + {offset} ELSE {ROUNDING[-1][1]} END)::VARCHAR"
    whole = f"(length({digits}) - 10)"
    cut = (f"CASE WHEN {whole} >= 6 THEN left({digits}, 6) ELSE rtrim(rtrim(CASE WHEN {whole} <= 0 "
           f"THEN '0.' || repeat('0', -{whole}) || left({digits}, 6) "
           f"ELSE left({digits}, {whole}) || '.' || substr({digits}, {whole} + 1, 6 - {whole}) END, '0'), '.') END")
    return (f"CASE WHEN {d} >= 0.0001 AND {d} <= 999999 THEN (CASE WHEN {x} < 0 THEN '-' ELSE '' END) || {cut} "
            f"ELSE printf('%g', {x}::DOUBLE) END")


#: widest integer range formatted through a table of every value in it
_TABLE_VALUES = 1 << 16


def as_matrix(texts: np.ndarray) -> np.ndarray:
    """Numpy bytes (``S`` dtype) as a uint8 matrix, one row each, NUL-padded."""
    texts = np.ascontiguousarray(texts, dtype=np.result_type(texts.dtype, "S1"))
    return texts.view(np.uint8).reshape(len(texts), texts.dtype.itemsize)


def _element_table(values: np.ndarray, vcf_type: str) -> tuple[np.ndarray, np.ndarray]:
    """(code of each value, text of each code as a NUL-padded uint8 row): each distinct value
    formatted once (integers by :func:`decimal_matrix`, small ranges, no wider than the values
    are many, through a table of the whole range)."""
    if values.dtype.kind in "iu" and values.size:
        low, high = int(values.min()), int(values.max())
        if high - low < min(_TABLE_VALUES, values.size):
            return values.astype(np.int32) - low, decimal_matrix(np.arange(low, high + 1))
    if values.dtype.kind == "f":  # by bits: -0.0 prints "-0"
        # (the distinct bits are the distinct values: no ``return_index``, which makes numpy
        # sort stably, 1.7x slower on a chunk of INFO/AF)
        bits = values.view(np.uint32 if values.dtype == np.float32 else np.uint64)
        unique_bits, inverse = np.unique(bits, return_inverse=True)
        with np.errstate(invalid="ignore"):  # the sentinels are signalling NaNs (printed as ".")
            distinct = unique_bits.view(values.dtype).astype(np.float64)
        return inverse.reshape(values.shape), as_matrix(np.array(float_texts(distinct)))
    distinct, inverse = np.unique(values, return_inverse=True)
    if values.dtype.kind in "iu":
        return inverse.reshape(values.shape), decimal_matrix(distinct)
    return inverse.reshape(values.shape), as_matrix(np.array([str(v).encode() for v in distinct.tolist()]))


def _padded(texts: np.ndarray, width: int) -> np.ndarray:
    """Rows of ``texts`` (a uint8 matrix) NUL-padded on the right to ``width`` bytes (their
    first bytes kept first: :attr:`Cells.first_byte`)."""
    if texts.shape[1] == width:
        return texts
    table = np.zeros((len(texts), width), np.uint8)
    table[:, :texts.shape[1]] = texts
    return table


#: slot bytes -> the unsigned integer of that size: numpy gathers those items about twice as
#: fast as ``void`` items of the same size (and ``intp`` codes need no conversion)
_SLOT_ITEMS = {size: np.dtype(f"u{size}") for size in (1, 2, 4, 8)}


def _slot_item(size: int) -> np.dtype:
    """The item numpy copies ``size`` bytes as: :data:`_SLOT_ITEMS`, else ``void``."""
    return _SLOT_ITEMS.get(size, np.dtype((np.void, size)))


def _slot_bytes(size: int) -> int:
    """Bytes of a slot for texts of ``size`` bytes: 3 and 7 rounded up (numpy copies items
    of 4 and 8 bytes much faster than of 3 or 7; the NUL is dropped with the padding)."""
    return size + 1 if size in (3, 7) else size


class _Text(abc.ABC):
    """The text of a column's cells, each :attr:`width` bytes (NUL-padded), written by
    :meth:`into`."""

    @property
    @abc.abstractmethod
    def shape(self) -> tuple[int, ...]:
        """The cells' shape (rows, or rows and samples)."""

    @property
    @abc.abstractmethod
    def width(self) -> int:
        """Bytes of a cell."""

    @abc.abstractmethod
    def into(self, out: np.ndarray) -> None:
        """Write the cells into ``out`` (``shape + (width,)`` uint8, its last axis contiguous)."""

    @property
    @abc.abstractmethod
    def dense(self) -> bool:
        """Whether no cell has padding (a NUL byte): each cell's text is its whole width."""

    def matrix(self) -> np.ndarray:
        """The cells as a new uint8 array (``shape + (width,)``)."""
        out = np.empty((*self.shape, self.width), np.uint8)
        self.into(out)
        return out


@dataclass(frozen=True)
class Cells(_Text):
    """The VCF text of cells as codes into a table of texts: ``table``, a uint8 row per code
    (NUL-padded), and ``codes`` (``(..., elements)``): a cell is the texts of its codes one
    after the other, each in a slot of the table's width (NUL bytes are padding: they are
    dropped when the text is joined); ``lead``: a byte each cell begins with, written over
    the first byte of its first slot (None: the texts' own)."""

    table: np.ndarray
    codes: np.ndarray
    lead: int | None = None

    @property
    def first_byte(self) -> int:
        """The byte a cell begins with when its first code is the table's first."""
        return int(self.table[0, 0]) if self.lead is None else self.lead

    @property
    def slot(self) -> int:
        """Bytes of a code's text: :func:`_slot_bytes` of the table's width."""
        return _slot_bytes(int(self.table.shape[1]))

    @property
    def width(self) -> int:
        """Bytes of a cell: its codes' slots."""
        return int(self.codes.shape[-1]) * self.slot

    def into(self, out: np.ndarray) -> None:
        """Write the cells into ``out`` (``codes.shape[:-1] + (width,)`` uint8, its last axis
        contiguous; a view into a larger text): one gather of table rows, each taken as one
        item of the table's width.

        >>> out = np.zeros((1, 4), np.uint8)
        >>> Cells(np.array([[49, 0], [50, 51]], np.uint8), np.array([[1, 0]])).into(out)
        >>> out.tolist()
        [[50, 51, 49, 0]]
        """
        table = self.table
        if table.shape[1] != self.slot:
            table = np.zeros((len(self.table), self.slot), np.uint8)
            table[:, :self.table.shape[1]] = self.table
        item = _slot_item(self.slot)
        # (take: 1/4 faster than [codes]; "wrap": 1/4 faster again than the bounds check of
        # "raise", and every code is a row of the table by construction)
        taken = table.view(item).reshape(-1).take(self.codes, mode="wrap")
        # a cell of several slots copied as one item: numpy would copy a vector's slots in a
        # loop of its length per cell (2-3 items), ~2.5x slower into a strided text
        cell = _slot_item(self.width) if self.codes.shape[-1] > 1 else item
        out.view(cell)[...] = taken.view(cell)
        if self.lead is not None:
            out[..., 0] = self.lead

    def rows(self, part: slice) -> Cells:
        """The cells of rows ``part`` (the first axis)."""
        return Cells(self.table, self.codes[part], self.lead)

    @property
    def shape(self) -> tuple[int, ...]:
        return self.codes.shape[:-1]

    @property
    def dense(self) -> bool:
        """Every text of the table fills its slot (a lead written over the first byte)."""
        return self.slot == self.table.shape[1] and bool(self.table[:, self.lead is not None:].all())


#: the GT text of a diploid call as a little-endian 32-bit item: the lead, the first allele,
#: the separator and the second; a ``DigitCalls`` item is this constant plus the allele bytes
_GT_LEAD, _GT_FIRST, _GT_SEPARATOR, _GT_SECOND = 0, 8, 16, 24
#: separator byte difference of a phased call ('|') from an unphased one ('/')
_PHASE_STEP = ord("|") - ord("/")


@dataclass(frozen=True)
class DigitCalls(_Text):
    """The GT text of diploid calls whose alleles are single digits or missing (most calls
    of most files): each cell is 4 bytes, ``lead``, allele, ``separator``, allele, so the
    text is computed from the allele bytes (a shift moves the two bytes of a call to
    bytes 1 and 3 of a 32-bit item, one add places the constant bytes): no table gather and
    no padding. 2.7x faster than :class:`Cells`' gather of 16-bit keys (a 64k-row table) on
    the 1000 Genomes slice's calls: 0.8 against 2.2 ns a call. ``calls``: ``(..., 2)`` int8
    (-1 missing: ``.``; contiguous), ``phased``: per call where the phase differs between
    calls (else None: ``separator`` everywhere), ``missing``: whether any allele is missing.

    >>> calls = np.array([[[0, 1], [-1, -1], [9, 0]]], dtype=np.int8)
    >>> DigitCalls(calls, None, ord(" "), ord("/"), True).matrix().tobytes()
    b' 0/1 ./. 9/0'
    >>> DigitCalls(calls, np.array([[True, False, True]]), ord(":"), ord("/"), True).matrix().tobytes()
    b':0|1:./.:9|0'
    """

    calls: np.ndarray
    phased: np.ndarray | None
    lead: int
    separator: int
    missing: bool

    @property
    def first_byte(self) -> int:
        return self.lead

    @property
    def width(self) -> int:
        return 4

    def into(self, out: np.ndarray) -> None:
        """Write the calls' text into ``out`` (``calls.shape[:-1] + (4,)`` uint8, its last axis
        contiguous), as :meth:`Cells.into`."""
        chars = self.calls.view(np.uint8)
        constant = self.lead << _GT_LEAD | self.separator << _GT_SEPARATOR
        if self.missing:  # the characters themselves: '0' + allele, and '.' ('0' - 2) for -1,
            # the one byte with its top bit set (arithmetic: 2.5x faster than a masked write)
            chars = np.add(chars, np.uint8(ord("0")))
            chars -= self.calls.view(np.uint8) >> 7
        else:
            constant |= ord("0") << _GT_FIRST | ord("0") << _GT_SECOND
        # each character to the high byte of a 16-bit item, the pair of a call one 32-bit item:
        # its alleles at bytes 1 and 3, the lead and separator added at bytes 0 and 2
        items = np.left_shift(chars, 8, dtype="<u2").view("<u4")
        if self.phased is not None:
            items += np.multiply(self.phased[..., None], np.uint32(_PHASE_STEP << _GT_SEPARATOR), dtype="<u4")
        np.add(items, np.uint32(constant), out=out.view("<u4"))

    def rows(self, part: slice) -> DigitCalls:
        return DigitCalls(self.calls[part], None if self.phased is None else self.phased[part], self.lead,
                          self.separator, self.missing)

    @property
    def shape(self) -> tuple[int, ...]:
        return self.calls.shape[:-1]

    @property
    def dense(self) -> bool:
        return True


#: the text of cells of a column: codes into a table, or diploid calls of digits
CellText = Cells | DigitCalls


def decimal_matrix(values: np.ndarray) -> np.ndarray:
    """Integers (1-d) as decimal text, a NUL-padded uint8 row each: the digits right-aligned,
    a ``-`` in the first column of negative ones (NULs are dropped when the text is joined).

    >>> [bytes(row).replace(b"\\0", b"") for row in decimal_matrix(np.array([0, 7, -42, 1200]))]
    [b'0', b'7', b'-42', b'1200']
    """
    values = np.asarray(values, dtype=np.int64).reshape(-1)
    magnitude = np.abs(values)[:, None]
    width = len(str(int(magnitude.max(initial=0))))
    powers = _POWERS[width - 1::-1]
    digits = (magnitude // powers % 10 + ord("0")).astype(np.uint8)
    digits[:, :-1][magnitude < powers[:-1]] = 0  # (leading zeros)
    if not (values < 0).any():
        return digits
    return np.concatenate([np.where(values < 0, ord("-"), 0).astype(np.uint8)[:, None], digits], axis=1)


def _prefixed(prefix: bytes, texts: np.ndarray, width: int) -> np.ndarray:
    """``prefix`` then each row of ``texts`` (a uint8 matrix), as rows of ``width`` bytes."""
    table = np.zeros((len(texts), width), np.uint8)
    table[:, :len(prefix)] = np.frombuffer(prefix, np.uint8)
    table[:, width - texts.shape[1]:] = texts
    return table


def _integer_cells(values: np.ndarray, lead: str) -> Cells | None:
    """:func:`cell_codes` of integers without a mask whose range is small: a table of every
    value from the least to the greatest (``.`` for the missing sentinel, the fill's text for
    fill), so a code is the value minus the least, with no pass for flags; None where a fill
    value comes before a value (nothing after a fill prints: the general path).

    A vector's elements share one table (a comma before each text; fill: nothing) when the
    lead is one byte and no first element is fill: the lead is then written over the first
    comma of each cell (:attr:`Cells.lead`). Else the first elements have a table of their
    own (the lead before each text, fill ``.``; first, as ``records._joined`` takes a row's first
    byte from the table's first text), the others' codes after theirs. Pairs of int8 whose
    cell text fits 8 bytes (AD of biallelic records) are gathered a cell at a time
    (:func:`_pair_cells`).
    """
    low, high = int(values.min()), int(values.max())
    if high - low >= min(_TABLE_VALUES, values.size):
        return None
    width = values.shape[-1]
    fill = values == spec.INT_FILL if width > 1 and low <= spec.INT_FILL else None
    if fill is not None and (fill[..., :-1] & ~fill[..., 1:]).any():
        return None
    span = np.arange(low, high + 1)
    blank = (span == spec.INT_MISSING) | (span == spec.INT_FILL)
    numbers = decimal_matrix(np.where(blank, 0, span))  # (every value's text at once)
    numbers[blank] = 0
    numbers[blank, -1] = ord(MISSING)
    prefix = lead.encode()
    if width == 1:  # (no other elements: no table of their texts, no pairs)
        return Cells(_prefixed(prefix, numbers, len(prefix) + numbers.shape[1]), _codes(values, low, len(numbers)))
    others = _prefixed(b",", numbers, 1 + numbers.shape[1])
    others[span == spec.INT_FILL] = 0
    pairs = _pair_cells(values, span, numbers, others, prefix)
    if pairs is not None:
        return pairs
    codes = _codes(values, low, len(numbers))
    if len(prefix) == 1 and (fill is None or not fill[..., 0].any()):
        return Cells(others, codes, prefix[0])
    codes[..., 1:] += len(numbers)
    wide = max(len(prefix), 1) + numbers.shape[1]
    return Cells(np.concatenate([_prefixed(prefix, numbers, wide), _prefixed(b"", others, wide)]), codes)


def _codes(values: np.ndarray, low: int, texts: int) -> np.ndarray:
    """Each value's row in a table of ``texts`` texts from ``low`` (room left for a second
    table of as many: :func:`_integer_cells`). Codes of 2 or 4 bytes: writing them is most
    of that function's work."""
    return np.subtract(values, np.int32(low), dtype=np.uint16 if 2 * texts <= 1 << 16 else np.uint32,
                       casting="unsafe")


def _pair_cells(values: np.ndarray, span: np.ndarray, numbers: np.ndarray, others: np.ndarray,
                lead: bytes) -> Cells | None:
    """:func:`_integer_cells` of pairs of int8 (``values``, ``(..., 2)``, in ``span``; AD of
    biallelic records) whose cell text fits 8 bytes and whose ``lead`` is one byte; else None.
    The codes are the pairs themselves: a pair's two bytes are one 16-bit key (no code
    computed), and the table holds the whole cell's text (``lead``, the first element's
    ``numbers`` row, the second's ``others`` row) of every key in ``span``, 8 bytes each: one
    gather a cell instead of two, 2x faster (a 65-row slice of 500 samples: 70 against 150 us).
    """
    if not (values.dtype == np.int8 and values.shape[-1] == 2 and len(lead) == 1
            and 1 + numbers.shape[1] + others.shape[1] <= 8):
        return None
    pairs = np.zeros((len(span), len(span), 8), np.uint8)  # [second, first]: the key's high byte first
    pairs[..., 0] = lead[0]
    pairs[..., 1:1 + numbers.shape[1]] = numbers[None, :]
    pairs[..., 1 + numbers.shape[1]:1 + numbers.shape[1] + others.shape[1]] = others[:, None]
    table = np.zeros((256, 256, 8), np.uint8)
    table[..., 0] = lead[0]  # (every key's: the first byte of key 0 is the cells' first byte)
    byte = (span & 0xFF).astype(np.intp)
    table[byte[:, None], byte[None, :]] = pairs
    return Cells(table.reshape(-1, 8), np.ascontiguousarray(values).view("<u2"))


def cell_codes(values: np.ndarray, vcf_type: str, no_value: np.ndarray | None = None,
               lead: str = "") -> Cells:
    """The VCF text of each cell of ``values`` (:class:`Cells`); the last axis is the vector
    of one cell when ``values`` has more than one dimension (``(rows, width)`` or
    ``(rows, samples, width)``). ``no_value``: as :func:`flags` (same shape as ``values``).
    ``lead``: text before each cell (a separator).

    Each element is a code into a table of texts (its value's, ``.`` when missing, nothing
    when fill; after the first element with a leading comma), so the cells are one gather:
    no Python work per cell.

    >>> m = cell_codes(np.array([[1, -1], [3, -2], [-2, -2]], dtype=np.int8), "Integer").matrix()
    >>> [bytes(row).replace(b"\\0", b"") for row in m]
    [b'1,.', b'3', b'.']
    >>> [bytes(row).replace(b"\\0", b"") for row in cell_codes(np.array([[1, 20], [-1, -1]]), "Integer",
    ...                                                       lead=":").matrix()]
    [b':1,20', b':.,.']
    """
    if values.ndim == 1:
        values = values[:, None]
    if no_value is None and values.dtype.kind in "iu" and values.size:
        fast = _integer_cells(values, lead)
        if fast is not None:
            return fast
    shape, width = values.shape[:-1], values.shape[-1]
    flat = values.reshape(-1, width)
    missing, fill = flags(flat, vcf_type, None if no_value is None else no_value.reshape(-1, width))
    if width > 1 and (fill[:, :-1] > fill[:, 1:]).any():
        fill = np.logical_or.accumulate(fill, axis=1)  # nothing after a fill value prints
    codes, texts = _element_table(flat, vcf_type)
    known = len(texts)
    if missing.any() or fill.any():
        codes = np.where(missing, known, np.where(fill, known + 1, codes))
    plain = np.zeros((known + 2, max(texts.shape[1], 1)), np.uint8)  # the texts, then "." twice
    plain[:known, :texts.shape[1]] = texts
    plain[known:, 0] = ord(MISSING)
    prefix = lead.encode()
    first = _prefixed(prefix, plain, len(prefix) + plain.shape[1])
    if width == 1:
        return Cells(first, codes.reshape(*shape, 1))
    # one table: the first element's texts, then the others' (a comma before; fill: nothing)
    others = _prefixed(b",", plain[:-1], 1 + plain.shape[1])
    wide = max(first.shape[1], others.shape[1])
    table = np.concatenate([_padded(first, wide), _padded(others, wide), np.zeros((1, wide), np.uint8)])
    codes[:, 1:] += len(plain)
    return Cells(table, codes.reshape(*shape, width))


def _texts(matrix: np.ndarray) -> list[str]:
    """The text of each row of a :meth:`Cells.matrix`."""
    return [bytes(row).replace(b"\0", b"").decode() for row in matrix]


def cells(values: np.ndarray, vcf_type: str, no_value: np.ndarray | None = None) -> np.ndarray:
    """The text of each cell of ``values`` (``str`` objects; a :func:`cell_codes` cell each).

    >>> cells(np.array([[-1, -2], [-1, -2]]), "Integer", np.array([[False, False], [False, True]])).tolist()
    ['-1,-2', '-1']
    >>> cells(np.array([0.5, 1e-5, 1234567.0, -0.0], dtype=np.float32), "Float").tolist()
    ['0.5', '1e-05', '1.23457e+06', '-0']
    """
    matrix = cell_codes(values, vcf_type, no_value).matrix()
    texts = _texts(matrix.reshape(-1, matrix.shape[-1]))
    return np.array(texts, dtype=object).reshape(matrix.shape[:-1])


def present(values: np.ndarray, vcf_type: str, no_value: np.ndarray | None = None,
            *, spelled: bool = False) -> np.ndarray:
    """Per row: whether any value of the row is set (a Flag: True), i.e. the field prints.
    With ``spelled`` (vectors, the last axis their elements, of a store that keeps ``.,.``
    apart from ``.`` and absent: ``VczStore.spells_missing_vectors``), also where a vector
    has a missing element past its first (``.,.``, which bcftools prints).

    >>> rows = np.array([[-1, -2], [-1, -1], [1, -2]])
    >>> present(rows, "Integer").tolist(), present(rows, "Integer", spelled=True).tolist()
    ([False, False, True], [False, True, True])
    """
    if values.dtype.kind == "b":
        return np.asarray(values.reshape(len(values), -1).any(axis=1))
    if no_value is None and values.dtype.kind in "iu" and values.size and values.min() >= 0:
        return np.ones(len(values), bool)  # no sentinel (one pass)
    missing, fill = flags(values, vcf_type, no_value)
    shown = (~(missing | fill)).reshape(len(values), -1).any(axis=1)
    if spelled:
        shown |= missing[..., 1:].reshape(len(values), -1).any(axis=1)
    return shown


#: largest key space formatted through a lookup table instead of a sort
_TABLE_KEYS = 1 << 22


def distinct_rows(flat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(index of one row of each distinct row value, inverse: which distinct value each row is).

    Small integer rows (genotypes, depths) are keyed arithmetically and looked up in a table
    (no sort); others go through ``np.unique``.

    >>> first, inverse = distinct_rows(np.array([[0, 1], [1, 1], [0, 1]], dtype=np.int8))
    >>> first.tolist(), inverse.tolist()
    ([0, 1], [0, 1, 0])
    """
    width = flat.shape[1]
    if flat.dtype.kind in "iub" and len(flat):
        low, high = int(flat.min()), int(flat.max())
        base = high - low + 1
        if base ** width <= _TABLE_KEYS:
            keys = np.zeros(len(flat), dtype=np.int64)
            for column in range(width):
                keys = keys * base + (flat[:, column].astype(np.int64) - low)
            first_of = np.full(base ** width, -1, dtype=np.int64)
            first_of[keys[::-1]] = np.arange(len(keys) - 1, -1, -1)
            present = np.flatnonzero(first_of >= 0)
            number = np.zeros(base ** width, dtype=np.int64)
            number[present] = np.arange(len(present))
            return first_of[present], number[keys]
    view = np.ascontiguousarray(flat).view(np.dtype((np.void, flat.dtype.itemsize * width))).ravel()
    _, first, inverse = np.unique(view, return_index=True, return_inverse=True)
    return first, inverse.ravel()


def genotype_cells(genotypes: np.ndarray, phased: np.ndarray | None, lead: str = "") -> CellText:
    """GT text of each call (:class:`Cells`, one code a call; :class:`DigitCalls` for diploid
    calls of one-digit alleles or missing): alleles joined by ``|`` (phased) or ``/``; ``.`` for
    missing; ``lead`` before each.

    >>> g = np.array([[[0, 1], [-1, -1], [2, -2]]], dtype=np.int8)
    >>> _texts(genotype_cells(g, np.array([[True, False, False]])).matrix()[0])
    ['0|1', './.', '2']
    """
    rows, samples, ploidy = genotypes.shape
    least, most = int(genotypes.min(initial=0)), int(genotypes.max(initial=0))
    digits = _digit_calls(genotypes, phased, lead, least, most)
    if digits is not None:
        return digits
    low = min(least, spec.INT_FILL)
    base = max(most, 0) - low + 1
    if 2 * base**ploidy <= _TABLE_VALUES:  # a code per possible call: a table of every text
        if ploidy == 2 and genotypes.dtype == np.int8:
            return _diploid_cells(genotypes, phased, lead, low, base)
        texts = _call_texts(ploidy, low, base, lead)
        codes = np.zeros((rows, samples), np.uint16)  # 2 * base**ploidy codes fit
        for p in range(ploidy):
            codes *= base
            np.add(codes, genotypes[..., p] - np.int16(low), out=codes, casting="unsafe")
        codes *= 2
        if phased is not None:
            codes += phased
        return Cells(texts, codes[..., None])
    phase = np.zeros((rows, samples), bool) if phased is None else phased
    keyed = np.concatenate(
        [genotypes.astype(np.int32, copy=False), phase[..., None].astype(np.int32)], axis=2
    ).reshape(-1, ploidy + 1)
    first, inverse = distinct_rows(keyed)
    texts = as_matrix(np.array([(lead + _genotype_text(keyed[k])).encode() for k in first]))
    return Cells(texts, inverse.reshape(rows, samples, 1))


@functools.lru_cache(maxsize=16)
def _call_texts(ploidy: int, low: int, base: int, lead: str) -> np.ndarray:
    """The text of every call code of :func:`genotype_cells` (alleles from ``low``, ``base``
    values each, then the phase), ``lead`` before each: the same for every chunk of a store
    (made once; read-only)."""
    calls = np.indices((base,) * ploidy + (2,)).reshape(ploidy + 1, -1).T
    calls[:, :-1] += low
    texts = as_matrix(np.array([(lead + _genotype_text(call)).encode() for call in calls]))
    texts.flags.writeable = False
    return texts


def _digit_calls(genotypes: np.ndarray, phased: np.ndarray | None, lead: str, least: int,
                 most: int) -> DigitCalls | None:
    """:class:`DigitCalls` of ``genotypes`` (``least`` and ``most`` their extremes) where every
    call is diploid (int8) of one-digit or missing alleles and ``lead`` is one byte; else None
    (a chunk with a haploid call, fill, or an allele from 10 goes through a table)."""
    if not (genotypes.shape[-1] == 2 and genotypes.dtype == np.int8 and len(lead.encode()) == 1
            and least >= spec.INT_MISSING and most <= 9):
        return None
    some = phased is not None and bool(phased.any())
    mixed = some and phased is not None and not phased.all()
    return DigitCalls(np.ascontiguousarray(genotypes), phased if mixed else None, ord(lead),
                      ord("|") if some and not mixed else ord("/"), least < 0)


def _diploid_cells(genotypes: np.ndarray, phased: np.ndarray | None, lead: str, low: int,
                   base: int) -> Cells:
    """:func:`genotype_cells` of diploid int8 calls, whose codes are the calls themselves: a
    call's two allele bytes are one 16-bit key, and the table holds the text of every key
    (:func:`_key_texts`). No code is computed per call where the calls of the chunk are all
    phased or all unphased (the keys are then the calls' bytes as they are); mixed, a call's
    phase is bit 16 of its key."""
    keys = np.ascontiguousarray(genotypes).view("<u2")[..., 0]
    phase = "none" if phased is None or not phased.any() else "all" if phased.all() else "mixed"
    if phased is not None and phase == "mixed":
        keys = np.bitwise_or(np.left_shift(phased, 16, dtype=np.intp), keys)
    return Cells(_key_texts(low, base, lead, phase), keys[..., None])


@functools.lru_cache(maxsize=16)
def _key_texts(low: int, base: int, lead: str, phase: str) -> np.ndarray:
    """The text of every 16-bit key of :func:`_diploid_cells` (``phase`` "mixed": 17-bit,
    the phase above), each padded to its :attr:`Cells.slot`: the text of each call code
    (:func:`_call_texts`) gathered by the code of each key; the same for every chunk of a
    store (made once; read-only)."""
    texts = _call_texts(2, low, base, lead)
    every = np.arange(1 << 16, dtype=np.intp)
    first, second = (every & 0xFF).astype(np.int8), (every >> 8).astype(np.int8)
    code = ((first.astype(np.intp) - low) * base + (second.astype(np.intp) - low)) * 2
    if phase == "all":
        code += 1
    elif phase == "mixed":
        code = np.concatenate([code, code + 1])
    slot = _slot_bytes(texts.shape[1])
    padded = np.zeros((len(texts), slot), np.uint8)
    padded[:, :texts.shape[1]] = texts
    table = padded[code.clip(0, len(texts) - 1)]  # (keys no call has: any text)
    table.flags.writeable = False
    return table


def _genotype_text(row: np.ndarray) -> str:
    alleles, is_phased = row[:-1], bool(row[-1])
    parts = [MISSING if a == spec.INT_MISSING else str(a) for a in alleles if a != spec.INT_FILL]
    return ("|" if is_phased else "/").join(parts) if parts else MISSING
