"""The fast path of the parser (VCF text read without htslib's reader, GT-only genotypes parsed
with numpy) spills exactly the blocks htslib's reader spills, on tricky inputs; and it steps
aside (htslib reads the file) where it cannot read a file exactly as htslib would.

The reference is htslib's reader (``_PartitionReader.run``, the path every other test checks
against bcftools); both paths run in this process on the same small VCF, with fd 2 sent to a
file as in a worker process.
"""

from __future__ import annotations

import contextlib
import os
import struct
import subprocess
import sys
import zlib

import numpy as np
import pytest
from corpus import CORPUS

from vcfzarr_sql.converter import convert, partitions, text
from vcfzarr_sql.converter.genotype_text import gt_only_lines, parse_genotypes, short_diploid_lines
from vcfzarr_sql.converter.reader import Partition, _PartitionReader, block_path, read_partition
from vcfzarr_sql.converter.spill import read_block
from vcfzarr_sql.converter.text import NotPlainText, record_lines, spans, text_kind

HEADER = """##fileformat=VCFv4.2
##contig=<ID=1,length=1000>
##INFO=<ID=DP,Number=1,Type=Integer,Description="depth">
##FORMAT=<ID=GT,Number=1,Type=String,Description="Genotype">
##FORMAT=<ID=DP,Number=1,Type=Integer,Description="depth">
#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\tFORMAT\tA\tB\tC
"""
#: Blocks of 3 records: each block below is GT-only (fast) or not (htslib parses its lines).
BLOCK = 3
TRICKY = [
    # fast: unphased, phased, mixed phasing across samples, missing and half-missing calls
    "1\t1\t.\tA\tC\t.\tPASS\tDP=3\tGT\t0/0\t0|1\t./.",
    "1\t2\trs2\tA\tC,G\t50\t.\t.\tGT\t.|.\t./1\t2|.",
    "1\t3\t.\tA\tC\t.\tq10\tNEW=x\tGT\t1|0\t0/.\t1/1",  # undeclared INFO key and FILTER
    # fast: haploid lines beside diploid and triploid ones
    "1\t4\t.\tA\tC\t.\t.\t.\tGT\t0\t1\t.",
    "1\t5\t.\tA\tC\t.\t.\t.\tGT\t0/1/1\t0|1|1\t.|./.",
    "2\t6\t.\tA\tC\t.\t.\t.\tGT\t0|1\t1|1\t0/0",  # undeclared contig
    # htslib: mixed ploidy within a line, a two-digit allele
    "2\t7\t.\tA\tC\t.\t.\t.\tGT\t0/1\t1\t.",
    "2\t8\t.\tA\t" + ",".join("CGT"[i % 3] * (i // 3 + 1) for i in range(11)) + "\t.\t.\t.\tGT\t0/10\t1/1\t0/0",
    "2\t9\t.\tA\tC\t.\t.\t.\tGT\t0/1\t0/0\t1/1",
    # htslib: more FORMAT fields after GT, GT not first
    "2\t10\t.\tA\tC\t.\t.\t.\tGT:DP\t0/1:3\t0/0:.\t1/1:7",
    "2\t11\t.\tA\tC\t.\t.\t.\tDP:GT\t3:0/1\t.:0/0\t7:1|1",
    "2\t12\t.\tA\tC\t.\t.\t.\tGT\t0|0\t0|0\t0|0",
    # fast again
    "2\t13\t.\tA\tC\t.\t.\t.\tGT\t1|1\t1/0\t0|0",
]


@contextlib.contextmanager
def _stderr_to(path):
    """fd 2 sent to ``path``, as in a worker process (the fast path reads htslib's messages)."""
    saved = os.dup(2)
    with open(path, "ab") as log:
        os.dup2(log.fileno(), 2)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def _spilled(tmp_path, vcf, name, fast):
    """The partition result and spilled blocks of the whole of ``vcf``, by one path."""
    spill = tmp_path / name
    spill.mkdir()
    with _stderr_to(tmp_path / f"{name}.stderr"):
        reader = _PartitionReader(str(vcf), Partition(0), str(spill), BLOCK)
        if fast:
            kind = reader.text_kind()
            assert kind is not None
            result = reader.run_text(kind)
        else:
            result = reader.run()
    blocks = [read_block(block_path(spill, 0, b)) for b in range(len(result.block_sizes))]
    return result, blocks


def _assert_same(fast, slow):
    (fast_result, fast_blocks), (slow_result, slow_blocks) = fast, slow
    assert fast_result == slow_result
    assert len(fast_blocks) == len(slow_blocks)
    for ours, theirs in zip(fast_blocks, slow_blocks):
        assert ours.keys() == theirs.keys()
        for name in ours:
            assert ours[name].dtype == theirs[name].dtype, name
            assert ours[name].shape == theirs[name].shape, name
            if ours[name].dtype == object:
                assert np.array_equal(ours[name], theirs[name]), name
            else:  # bit for bit (NaN payloads: missing and fill)
                assert ours[name].tobytes() == theirs[name].tobytes(), name


def _write(tmp_path, lines, *, header=HEADER, bgzip=True):
    plain = tmp_path / "in.vcf"
    plain.write_text(header + "".join(line + "\n" for line in lines))
    if not bgzip:
        return plain
    subprocess.run(["bgzip", "-f", str(plain)], check=True)
    return tmp_path / "in.vcf.gz"


@pytest.mark.parametrize("bgzip", [True, False], ids=["bgzf", "plain"])
def test_fast_path_spills_what_htslib_spills(tmp_path, bgzip):
    vcf = _write(tmp_path, TRICKY, bgzip=bgzip)
    _assert_same(_spilled(tmp_path, vcf, "fast", True), _spilled(tmp_path, vcf, "htslib", False))


def test_gt_only_corpus_file(tmp_path):
    """A real GT-only file: the 1000 Genomes slice's first 600 records (phased, multi-allelic
    and symbolic records, 2504 samples), in 200-record blocks."""
    source = CORPUS / "vcflib+vcflib/samples/1kg-phaseIII-v5a.20130502.genotypes.chr22-16-16.5mb.vcf.gz"
    text = subprocess.run(f"bgzip -dc '{source}' | head -c 12000000", shell=True, capture_output=True,
                          check=True).stdout.decode()
    header, _, body = text.partition("\n#CHROM")
    lines = body.split("\n")[1:601]
    vcf = _write(tmp_path, lines, header=header + "\n#CHROM" + body.split("\n")[0] + "\n")
    global BLOCK
    saved, BLOCK = BLOCK, 200
    try:
        _assert_same(_spilled(tmp_path, vcf, "fast", True), _spilled(tmp_path, vcf, "htslib", False))
    finally:
        BLOCK = saved


#: Site columns (GT-only lines of one sample), in blocks of 3: plain blocks (their sites read
#: from the text, no htslib) and blocks with one line htslib must read.
SITES_HEADER = HEADER.replace("##INFO", '##FILTER=<ID=q10,Description="q">\n##INFO').replace(
    "\tA\tB\tC\n", "\tA\n")
PLAIN_SITES = [
    "1\t1\trs1;rs2\tACGT\tA,*\t12.5\tPASS\t.\tGT\t0/1",
    "1\t2\t.\tN\t.\t0\t.\t.\tGT\t./.",
    "1\t3\tid3\tA\tC,G,T\t1234567.1234567\tq10\t.\tGT\t3|1",
    "1\t4\t.\tAC\tA\t0.1\t.\t.\tGT\t0",
    "1\t5\t.\tA\tC\t007\tPASS\t.\tGT\t1|.",
    "1\t999999999\t.\tA\tT\t.\t.\t.\tGT\t0/0",
]
OTHER_SITES = [  # (each: its block is read by htslib; {} its POS)
    "1\t{}\t.\ta\tC\t.\t.\t.\tGT\t0/1",  # lower case
    "1\t{}\t.\tA\t<DEL>\t.\t.\t.\tGT\t0/1",  # symbolic
    "1\t{}\t.\tA\tC\t.\t.\tDP=3\tGT\t0/1",  # INFO
    "1\t{}\t.\tA\tC\t.\tq20\t.\tGT\t0/1",  # an undeclared filter
    "1\t{}\t.\tA\tC\t.\tq10;PASS\t.\tGT\t0/1",  # two filters
    "1\t{}\t.\tA\tC\t1e3\t.\t.\tGT\t0/1",  # QUAL in exponent form
    "1\t0{}\t.\tA\tC\t.\t.\t.\tGT\t0/1",  # a leading zero
    "3\t{}\t.\tA\tC\t.\t.\t.\tGT\t0/1",  # an undeclared contig
    "3\t{}\t.\tA\tC,\t.\t.\t.\tGT\t0/1",  # an empty ALT
]


def _at(line, chrom, pos):
    """``line`` moved to ``chrom:pos``."""
    return "\t".join([chrom, str(pos), *line.split("\t")[2:]])


def test_plain_sites_are_read_from_the_text(tmp_path, monkeypatch):
    """GT-only lines of one sample (what ``add`` reads) whose sites are plain are read without
    htslib, and spill what htslib's reader spills; a block with any other line is htslib's.
    (The header declares an INFO and a FORMAT field no line has: their columns are missing.)"""
    import vcfzarr_sql.converter.reader as reader_module
    from vcfzarr_sql.converter.site_text import site_columns

    lines = PLAIN_SITES[:3]
    for k, other in enumerate(OTHER_SITES):  # each other line in a block with two plain ones
        chrom, pos = other[0], 1000 + 3 * k
        lines += [other.format(pos), _at(PLAIN_SITES[3], chrom, pos + 1), _at(PLAIN_SITES[4], chrom, pos + 2)]
    lines += [_at(line, "3", 2000 + j) for j, line in enumerate(PLAIN_SITES[3:])]  # (3 is declared now)
    # blocks of one FILTER, ID and ALT each (one shared string), and of "." next to "."
    lines += [_at(PLAIN_SITES[k], "3", 3000 + j) for j, k in enumerate([4, 4, 4, 1, 1, 1, 1, 1, 4])]
    vcf = _write(tmp_path, lines, header=SITES_HEADER)
    read = []

    def counted(*args):
        found = site_columns(*args)
        read.append(found is not None)
        return found

    monkeypatch.setattr(reader_module, "site_columns", counted)
    fast = _spilled(tmp_path, vcf, "fast", True)
    assert read == [True, *[False] * len(OTHER_SITES), True, True, True, True]
    _assert_same(fast, _spilled(tmp_path, vcf, "htslib", False))


@pytest.mark.parametrize(
    "lines",
    [
        [*TRICKY[:4], "", *TRICKY[4:]],  # a blank line: htslib's error
        [TRICKY[0], "1\tX\t.\tA\tC\t.\t.\t.\tGT\t0/1\t0/0\t1/1"],  # a POS htslib rejects
        [TRICKY[0], "1\t2\t.\tA\tC\t.\t.\tX=é\tGT\t0/1\t0/0\t1/1"],  # non-ASCII
        [TRICKY[0], "1\t2\t.\tA\tC\t.\t.\t."],  # no sample columns
        TRICKY[6:],  # the first block is not GT-only
        [TRICKY[0], "#1\t2\t.\tA\tC\t.\t.\t.\tGT\t0/1\t0/0\t1/1", TRICKY[1]],  # a comment line
        [TRICKY[0], "1\t2\t.\tA\tC\t.\t.\t.\tGT\t0/1\t0/0\t1/1\r", TRICKY[1]],  # a CRLF line
    ],
    ids=["blank", "htslib-error", "non-ascii", "no-samples", "first-block", "comment", "crlf"],
)
def test_fast_path_steps_aside(tmp_path, lines):
    vcf = _write(tmp_path, lines)
    with _stderr_to(tmp_path / "fast.stderr"):
        reader = _PartitionReader(str(vcf), Partition(0), str(tmp_path), BLOCK)
        with pytest.raises(NotPlainText):
            reader.run_text(reader.text_kind() or "")


def test_read_partition_falls_back_to_htslib(tmp_path):
    """A file the fast path cannot finish is read by htslib from the start, and nothing the
    fast path spilled is left."""
    vcf = _write(tmp_path, [*TRICKY[:4], "1\t9\t.\tA\tC\t.\t.\tX=é\tGT\t0/1\t0/0\t1/1"])
    (tmp_path / "fast").mkdir()
    with _stderr_to(tmp_path / "fast.stderr"):
        result = read_partition(str(vcf), Partition(0), str(tmp_path / "fast"), BLOCK)
    _assert_same((result, [read_block(block_path(tmp_path / "fast", 0, b)) for b in range(2)]),
                 _spilled(tmp_path, vcf, "htslib", False))
    assert len(list((tmp_path / "fast").iterdir())) == 2


def _bgzf(data: bytes, size: int) -> bytes:
    """``data`` as BGZF blocks of ``size`` bytes of text (tiny blocks: many cuts in a small file)."""
    out = []
    for piece in [*(data[start : start + size] for start in range(0, len(data), size)), b""]:  # b"": EOF
        deflate = zlib.compressobj(6, zlib.DEFLATED, -15)
        body = deflate.compress(piece) + deflate.flush()
        header = b"\x1f\x8b\x08\x04\x00\x00\x00\x00\x00\xff\x06\x00BC\x02\x00"
        out.append(header + struct.pack("<H", len(body) + 25) + body
                   + struct.pack("<II", zlib.crc32(piece), len(piece)))
    return b"".join(out)


@pytest.fixture(params=["libdeflate", "zlib"])
def inflater(request, monkeypatch):
    """Each inflater of BGZF blocks: libdeflate (the ``fast`` extra) and zlib, the fallback."""
    if request.param == "libdeflate":
        pytest.importorskip("deflate")
        assert text._inflate is not text._zlib_inflate
    else:
        monkeypatch.setattr(text, "_inflate", text._zlib_inflate)
        monkeypatch.setattr(text, "_DAMAGED", (zlib.error,))
        monkeypatch.setattr(text, "_crc32", zlib.crc32)
    return request.param


def test_damaged_bgzf_blocks_step_aside(tmp_path, inflater):
    """Lines read the same by either inflater; a block with a flipped byte, a wrong CRC or
    length, or a length past BGZF's 64 KiB is not read (htslib then says what is wrong)."""
    data = (HEADER + "".join(line + "\n" for line in TRICKY)).encode()
    good = _bgzf(data, 1 << 16)
    path = tmp_path / "in.vcf.gz"
    path.write_bytes(good)
    assert [line for block in record_lines(str(path), "bgzf", 100) for line in block] == \
        [line.encode() for line in TRICKY]
    size = struct.unpack_from("<H", good, 16)[0] + 1  # the first block's
    crc, length = struct.unpack_from("<II", good, size - 8)
    damaged = {
        "body": good[:30] + bytes([good[30] ^ 0xFF]) + good[31:],
        "crc": good[: size - 8] + struct.pack("<II", crc ^ 1, length) + good[size:],
        "length": good[: size - 8] + struct.pack("<II", crc, length - 1) + good[size:],
        "huge": good[: size - 8] + struct.pack("<II", crc, 1 << 31) + good[size:],
    }
    for name, body in damaged.items():
        path.write_bytes(body)
        with pytest.raises(NotPlainText):
            list(record_lines(str(path), "bgzf", 100))
            pytest.fail(f"read a block with a damaged {name}")


@pytest.mark.parametrize("kind", ["bgzf", "plain"])
def test_spans_give_every_line_once(tmp_path, kind):
    """However a file is cut, the spans' lines are the file's record lines, in order."""
    text = (HEADER + "".join(line + "\n" for line in TRICKY)).encode()
    path = tmp_path / "in.vcf"
    path.write_bytes(_bgzf(text, 37) if kind == "bgzf" else text)
    assert text_kind(str(path)) == kind
    expected = [line.encode() for line in TRICKY]
    for parts in (1, 2, 3, 5, 8, 30):
        cut = spans(str(path), kind, parts)
        assert cut is not None and cut[0][0] == 0 and cut[-1][1] is None
        got = [line for span in cut for block in record_lines(str(path), kind, 4, span) for line in block]
        assert got == expected, parts
    if kind == "plain":  # every cut after the header, each byte a cut
        body = len(HEADER)
        for at in range(body + 1, len(text)):
            got = [line for span in [(0, at), (at, None)] for block in record_lines(str(path), kind, 4, span)
                   for line in block]
            assert got == expected, at


def test_spans_spill_what_htslib_spills(tmp_path):
    """The spans of a file, read one by one (as workers read them), spill the blocks htslib's
    reader spills from the whole file (one record a block: the same blocks either way)."""
    global BLOCK
    # every record GT-only of one ploidy (no span steps aside), no undeclared INFO key (a span that
    # does not see it has no column of it: the encoder fills it in, as for index regions)
    lines = [line.replace("NEW=x", "DP=4") for line in [*TRICKY[:6], *TRICKY[12:]]]
    vcf = tmp_path / "in.vcf.gz"
    vcf.write_bytes(_bgzf((HEADER + "".join(line + "\n" for line in lines)).encode(), 41))
    saved, BLOCK = BLOCK, 1
    try:
        slow = _spilled(tmp_path, vcf, "htslib", False)
    finally:
        BLOCK = saved
    found = spans(str(vcf), "bgzf", 4)
    assert found is not None and len(found) == 4
    (tmp_path / "spans").mkdir()
    results, blocks = [], []
    with _stderr_to(tmp_path / "spans.stderr"):
        for k, span in enumerate(found):
            result = read_partition(str(vcf), Partition(k, span=span), str(tmp_path / "spans"), 1)
            assert not result.stepped_aside
            results.append(result)
            blocks += [read_block(block_path(tmp_path / "spans", k, b)) for b in range(len(result.block_sizes))]
    assert [n for r in results for n in r.block_sizes] == slow[0].block_sizes
    _assert_same((slow[0], blocks), slow)


def test_spans_step_aside_then_htslib_reads_the_file(tmp_path, monkeypatch):
    """``--workers 2`` on a text file the fast path cannot read: its spans step aside, and the
    file is read again in partitions htslib reads; the store is the one a worker writes."""
    monkeypatch.setattr(partitions, "MIN_PARTITION_BYTES", 64)
    vcf = tmp_path / "in.vcf.gz"
    # the first record is GT-only (spans are planned), the first block is not (its span steps aside)
    lines = [TRICKY[0], *TRICKY[9:], *TRICKY[1:9]]
    vcf.write_bytes(_bgzf((HEADER + "".join(line + "\n" for line in lines)).encode(), 61))
    (tmp_path / "spill").mkdir()
    found = spans(str(vcf), "bgzf", 2)
    assert found is not None and len(found) == 2
    with _stderr_to(tmp_path / "spans.stderr"):
        assert read_partition(str(vcf), Partition(0, span=found[0]), str(tmp_path / "spill"), BLOCK).stepped_aside
    assert not list((tmp_path / "spill").iterdir())
    convert(vcf, tmp_path / "one.vcz", workers=1, variants_chunk_size=BLOCK)
    convert(vcf, tmp_path / "two.vcz", workers=2, variants_chunk_size=BLOCK)
    assert _files(tmp_path / "one.vcz") == _files(tmp_path / "two.vcz")


def _files(store):
    return {p.relative_to(store).as_posix(): p.read_bytes() for p in store.rglob("*") if p.is_file()}


_CHARS = "09./|\t-:a "


def test_diploid_calls_follow_the_grammar(kernels):
    """Every 3-byte call over a few characters, and every byte between two calls: a call is
    read when its alleles are digits or '.' and its separator '/' or '|', calls are separated
    by a tab; anything else leaves the block to htslib (None). With numpy and with the
    compiled kernel."""
    for a in _CHARS:
        for sep in _CHARS:
            for b in _CHARS:
                parsed = parse_genotypes([f"{a}{sep}{b}".encode()], 1)
                if a in "09." and b in "09." and sep in "/|":
                    assert parsed is not None
                    alleles, phased = parsed
                    assert alleles.tolist() == [[[-1 if c == "." else int(c) for c in (a, b)]]]
                    assert phased.tolist() == [[sep == "|"]]
                else:
                    assert parsed is None, (a, sep, b)
    for between in _CHARS:
        parsed = parse_genotypes([f"0/1{between}1|.".encode()], 2)
        assert (parsed is not None) == (between == "\t"), between


def test_short_lines_are_cut_as_gt_only_lines_cuts_them(kernels):
    """Lines of one or two samples cut with numpy give what cutting them line by line then
    parsing gives, or nothing (a block left to that): every 3-byte call over a few characters,
    after heads of seven, eight and nine columns and FORMATs other than GT. With numpy and with
    the compiled kernel."""
    heads = ["1\t5\t.\tA\tC\t.\t.", "1\t5\t.\tA\tC\t.\t.\t.", "1\t5\t.\tA\tC\t.\t.\t.\tX"]
    every = [f"{a}{sep}{b}" for a in _CHARS for sep in _CHARS for b in _CHARS]
    for head in heads:
        for form in ("GT", "GT:DP", "XGT"):
            for call in every if (head, form) == (heads[1], "GT") else ["0/1", "1|."]:
                for samples in ([call], ["0|1", call]):
                    text = f"{head}\t{form}\t" + "\t".join(samples)
                    lines = [line.encode() for line in (text, text.replace("1\t5", "1\t6"))]
                    short = short_diploid_lines(lines, len(samples))
                    cut = gt_only_lines(lines, len(samples))
                    parsed = None if cut is None else parse_genotypes(cut[1], len(samples))
                    if short is None:
                        assert parsed is None or parsed[0].shape[-1] != 2 or head != heads[1] or form != "GT"
                        continue
                    assert cut is not None and parsed is not None
                    assert short[0] == cut[0]
                    assert short[1][0].tolist() == parsed[0].tolist() and short[1][1].tolist() == parsed[1].tolist()


@pytest.mark.parametrize("bgzip", [True, False], ids=["bgzf", "plain"])
def test_text_size_estimates_the_records_text(tmp_path, bgzip):
    """Within 10% of the text after the header for a bgzipped file (from its first blocks),
    exactly for a plain file."""
    rng = np.random.default_rng(3)
    lines = [f"1\t{i + 1}\t.\tA\tC\t.\t.\t.\tGT\t" + "\t".join(f"{a}/{b}" for a, b in rng.integers(0, 2, (3, 2)))
             for i in range(40_000)]
    vcf = _write(tmp_path, lines, bgzip=bgzip)
    body = sum(len(line) + 1 for line in lines)
    found = text.text_size(str(vcf), "bgzf" if bgzip else "plain")
    assert found == body if not bgzip else abs(found - body) < body / 10


_WARM = """
import sys
import vcfzarr_sql.kernels as kernels
from vcfzarr_sql.converter.genotype_text import warm_kernels
print(warm_kernels(sys.argv[1]), "numba" in sys.modules)
kernels.WORK_TO_COMPILE = 1
print(warm_kernels(sys.argv[2]), "numba" in sys.modules)
print(warm_kernels(sys.argv[1]), "numba" in sys.modules)
"""


def test_a_large_gt_only_text_loads_the_kernels_before_the_workers(tmp_path):
    """``auto``: a GT-only file too small to repay numba keeps to numpy (False: its workers
    are kept to numpy for good); any other file too, whatever its size (the fast path is the
    kernels' main user; None: no estimate, its workers tier as usual); past the work threshold
    a GT-only file loads numba, in the process that forks the workers."""
    pytest.importorskip("numba")
    gt_only = _write(tmp_path, TRICKY[:1])
    (tmp_path / "other").mkdir()
    other = _write(tmp_path / "other", TRICKY[9:10])
    out = subprocess.run([sys.executable, "-c", _WARM, str(gt_only), str(other)], capture_output=True, text=True,
                         check=True, env={**os.environ, "VCFZARR_SQL_KERNELS": "auto"}).stdout.split("\n")
    assert out[:3] == ["False False", "None False", "True True"]
