"""``convert`` of several inputs (their concatenation, as ``bcftools concat`` gives it), of
standard input, and its one-line summary."""

from __future__ import annotations

import subprocess
import sys

import pytest
from corpus import CORPUS

from vcfzarr_sql.cli import main
from vcfzarr_sql.converter import convert
from vcfzarr_sql.converter.inputs import HeaderMismatchError
from vcfzarr_sql.engine import connect

SAMPLE = CORPUS / "sgkit-dev+bio2zarr/tests/data/vcf/sample.vcf.gz"


def _bcftools(*args: str) -> None:
    subprocess.run(["bcftools", *args], check=True, capture_output=True)


@pytest.fixture
def per_contig(tmp_path):
    parts = []
    for contig in ("19", "20", "X"):
        part = tmp_path / f"part{contig}.vcf.gz"
        _bcftools("view", "-r", contig, "-Oz", "-o", str(part), str(SAMPLE))
        parts.append(part)
    return parts


def _rows(store) -> list[tuple]:
    return connect().sql(f"SELECT * FROM vcf_zarr('{store}')").fetchall()


def test_several_inputs_equal_their_bcftools_concatenation(per_contig, tmp_path):
    concatenated = tmp_path / "concat.vcf.gz"
    _bcftools("concat", "-Oz", "-o", str(concatenated), *map(str, per_contig))
    summary = convert(per_contig, tmp_path / "parts.zarr", show_progress=False)
    convert(concatenated, tmp_path / "concat.zarr", show_progress=False)
    assert _rows(tmp_path / "parts.zarr") == _rows(tmp_path / "concat.zarr")
    assert (summary.records, summary.samples) == (9, 3)
    assert summary.store_bytes > 0


def test_inputs_whose_headers_differ_are_refused(per_contig, tmp_path):
    fewer = tmp_path / "fewer.vcf.gz"
    _bcftools("view", "-s", "NA00001", "-Oz", "-o", str(fewer), str(per_contig[1]))
    with pytest.raises(HeaderMismatchError, match="samples differ"):
        convert([per_contig[0], fewer], tmp_path / "x.zarr", show_progress=False)
    assert main(["convert", str(per_contig[0]), str(fewer), str(tmp_path / "y.zarr")]) == 1
    assert not (tmp_path / "x.zarr").exists()


def test_standard_input_and_summary_line(tmp_path):
    out = tmp_path / "stdin.zarr"
    with open(SAMPLE, "rb") as f:
        done = subprocess.run(
            [sys.executable, "-c", "import sys; from vcfzarr_sql.cli import main; sys.exit(main())",
             "convert", "-", str(out)],
            stdin=f, capture_output=True, text=True,
        )
    assert done.returncode == 0, done.stderr
    assert done.stderr.startswith(f"{out}: 9 records, 3 samples, ")
    convert(SAMPLE, tmp_path / "file.zarr", show_progress=False)
    assert _rows(out) == _rows(tmp_path / "file.zarr")


def _bgzf_blocks(data: bytes) -> list[bytes]:
    """The BGZF blocks of ``data`` (each block's size is in its BC extra field)."""
    blocks, at = [], 0
    while at < len(data):
        size = int.from_bytes(data[at + 16 : at + 18], "little") + 1
        blocks.append(data[at : at + size])
        at += size
    return blocks


def test_a_bgzip_stream_on_stdin_cut_at_a_block_boundary_is_refused(tmp_path):
    """Issue 23 (8): standard input is checked for the BGZF end-of-file block as a file is
    (before, half the records were converted with exit 0)."""
    text = tmp_path / "many.vcf"
    header = subprocess.run(["bcftools", "view", "-h", str(SAMPLE)], check=True,
                            capture_output=True, text=True).stdout
    with open(text, "w") as f:
        f.write(header)
        for i in range(20_000):
            f.write(f"20\t{1000 + i}\trs{i}\tA\tG\t50\tPASS\tDP=10\tGT\t0|0\t0|1\t1/1\n")
    whole = tmp_path / "many.vcf.gz"
    _bcftools("view", "-Oz", "-o", str(whole), str(text))
    blocks = _bgzf_blocks(whole.read_bytes())
    assert len(blocks) > 3 and blocks[-1] == bytes.fromhex(
        "1f8b08040000000000ff0600424302001b0003000000000000000000")
    cut = tmp_path / "cut.vcf.gz"
    cut.write_bytes(b"".join(blocks[: len(blocks) // 2]))
    out = tmp_path / "cut.zarr"
    with open(cut, "rb") as f:
        done = subprocess.run(
            [sys.executable, "-c", "import sys; from vcfzarr_sql.cli import main; sys.exit(main())",
             "convert", "-", str(out)],
            stdin=f, capture_output=True, text=True,
        )
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        "error: standard input: no BGZF EOF marker; file may be truncated"], done.stderr
    assert not out.exists()
