"""Integer pairs (AD of biallelic records, stored int8) as bcftools writes them, through both of
``view``'s ways: a cell at a time, the pair's two bytes one key into a table of whole cells
(``values._pair_cells``), and an element at a time (the pair path forced off). Each chunk
(3 records of 3 cells, repeated) holds a case: small values, missing values and vectors with a
missing element, a vector cut short (one value: fill after it), values up to 127, small
negative values; then chunks the pair path does not take (a cell wider than 8 bytes: -100; a
fill before a value cannot be stored, so none). With GT before AD, and AD first (no GT)."""

from __future__ import annotations

import subprocess

import pytest

from vcfzarr_sql.store import open_store
from vcfzarr_sql.view import values, vcf_lines

#: each record's three cells repeated: a chunk's range of values must be less than its number of
#: values for a table of the range (``values._integer_cells``)
REPEAT = 20
FORMAT = {"GT": '##FORMAT=<ID=GT,Number=1,Type=String,Description="g">',
          "AD": '##FORMAT=<ID=AD,Number=R,Type=Integer,Description="a">',
          "DP": '##FORMAT=<ID=DP,Number=1,Type=Integer,Description="d">'}
#: the AD cells of each chunk's records; the last chunk's are wider than 8 bytes (-100)
CHUNKS = [
    ["0,0 3,1 9,9", "12,3 0,45 7,0", "1,2 2,1 0,0"],  # one and two digits
    [". 1,. .,4", ".,. 5,5 .", "0,1 . 2,2"],  # missing values, missing elements
    ["5 6,7 8", "9 . 1,1", "0,0 3 4,4"],  # one value: the second is fill
    ["127,0 99,127 100,100", "0,127 127,127 1,1", "55,66 77,88 110,120"],  # three digits
    ["-3,0 0,-5 -9,-9", "-12,3 4,-45 .", "-3 2,2 0,-7"],  # negative (not -1, -2: sentinels, masked)
    ["-100,0 1,1 2,2", "3,3 -100,-100 4,4", "5,5 6,6 7,7"],  # a cell over 8 bytes: by element
]


def _vcf(tmp_path, fields: str):
    lines = []
    for k, record in enumerate(cell for chunk in CHUNKS for cell in chunk):
        cells = [":".join({"GT": "0/1", "AD": ad, "DP": str(k)}[f] for f in fields.split(":"))
                 for ad in record.split() * REPEAT]
        lines.append(f"1\t{k + 1}\t.\tA\tC\t.\t.\t.\t{fields}\t" + "\t".join(cells))
    vcf = tmp_path / f"{fields.replace(':', '_')}.vcf"
    header = ["##fileformat=VCFv4.2", "##contig=<ID=1>", *(FORMAT[f] for f in fields.split(":")),
              "\t".join(["#CHROM", "POS", "ID", "REF", "ALT", "QUAL", "FILTER", "INFO", "FORMAT",
                         *(f"S{k}" for k in range(3 * REPEAT))])]
    vcf.write_text("\n".join(header + lines) + "\n")
    return vcf


@pytest.mark.parametrize("fields", ["GT:AD:DP", "AD:DP", "AD"])
def test_pair_and_element_paths_equal_bcftools(convert_once, tmp_path, monkeypatch, fields):
    vcf = _vcf(tmp_path, fields)
    theirs = subprocess.run(["bcftools", "view", "-H", str(vcf)], check=True, capture_output=True,
                            text=True).stdout.splitlines()
    store = convert_once(vcf, variants_chunk_size=3)
    made = []
    pair_cells = values._pair_cells

    def spy(values, *args):
        cells = pair_cells(values, *args)
        if values.shape[-1] == 2:  # (AD; DP comes by too)
            made.append(cells)
        return cells

    monkeypatch.setattr(values, "_pair_cells", spy)
    by_pair = [line.rstrip("\n") for line in vcf_lines(open_store(store))][1:]
    assert [cells is not None for cells in made] == [True] * 5 + [False]  # both paths ran
    monkeypatch.setattr(values, "_pair_cells", lambda *args: None)
    by_element = [line.rstrip("\n") for line in vcf_lines(open_store(store))][1:]
    assert len(theirs) == 3 * len(CHUNKS)
    assert by_pair == theirs
    assert by_element == theirs
