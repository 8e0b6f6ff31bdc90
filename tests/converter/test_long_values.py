"""INFO values of 2 GiB or more, which htslib reads wrong without a word (issue 23 item 9):
the converter refuses them, naming file, record and field. A 2 GiB value is not cheap, so the
tests lower the limit (:data:`.long_values.LIMIT`) on small files."""

from __future__ import annotations

import gzip

import pytest

from vcfzarr_sql.converter import long_values
from vcfzarr_sql.converter.reader import Partition, read_partition
from vcfzarr_sql.errors import VcfParseError

TEXT = (b"##fileformat=VCFv4.2\n##contig=<ID=1,length=1000>\n"
        b'##INFO=<ID=DP,Number=1,Type=Integer,Description="depth">\n'
        b'##INFO=<ID=NOTE,Number=1,Type=String,Description="a note, long or not">\n'
        b"#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\n"
        b"1\t5\t.\tA\tC\t.\tPASS\tDP=3;NOTE=short\n"
        b"1\t7\trs1\tA\tG\t.\tPASS\tNOTE=a=b,cdefghijkl;DP=4\n"
        b"1\t9\t.\tA\tT\t.\tPASS\tNOTE=abcdefghijklmnopq\n")


@pytest.mark.parametrize("size", [1, 2, 3, 7, 16, len(TEXT)])
def test_the_first_long_value_is_found_wherever_the_text_is_cut(size) -> None:
    pieces = [TEXT[start : start + size] for start in range(0, len(TEXT), size)]
    assert long_values.first_long_value(pieces, limit=14) == ("1:7", "NOTE")  # "a=b,cdefghijkl"
    assert long_values.first_long_value(pieces, limit=15) == ("1:9", "NOTE")
    assert long_values.first_long_value(pieces, limit=18) is None  # (header lines are longer)


def test_a_value_past_the_limit_is_an_error_naming_file_record_and_field(tmp_path, monkeypatch) -> None:
    """Before, the value htslib read wrong was stored (as NULL, or garbage) with no word."""
    vcf = tmp_path / "long.vcf.gz"
    vcf.write_bytes(gzip.compress(TEXT))
    (tmp_path / "spill").mkdir()
    monkeypatch.setattr(long_values, "LIMIT", 14)
    with pytest.raises(VcfParseError, match=r"long\.vcf\.gz: an INFO value of 14 bytes or more.* "
                                            r"at record 1:7 in field INFO/NOTE$"):
        read_partition(str(vcf), Partition(0), str(tmp_path / "spill"), 2)
    monkeypatch.setattr(long_values, "LIMIT", 18)
    assert read_partition(str(vcf), Partition(0), str(tmp_path / "spill"), 2).num_records == 3
