"""GT text, as bcftools writes it, through both of ``view``'s ways: diploid calls of one-digit
or missing alleles computed from the allele bytes (``values.DigitCalls``), any other chunk
through a table of call texts. The same store is written both ways (the first forced off) and
compared with bcftools: chunks where every call qualifies (phased, unphased, a mix, missing
alleles) and chunks where one record does not (an allele from 10, a haploid call). Chunks
whose sample cells have no padding are joined without a NUL pass (``records._dense_lines``):
GT alone, or with DP of one digit."""

from __future__ import annotations

import subprocess

import pytest

from vcfzarr_sql.store import open_store
from vcfzarr_sql.view import records, values, vcf_lines

HEADER = """##fileformat=VCFv4.2
##contig=<ID=1>
##FORMAT=<ID=GT,Number=1,Type=String,Description="g">
##FORMAT=<ID=DP,Number=1,Type=Integer,Description="d">
#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\tFORMAT\tA\tB\tC
"""
ALTS = "C,G,T,CA,CC,CG,CT,GA,GC,GG,GT"  # 11 ALTs: alleles up to 11
#: each chunk (3 records) of calls of samples A, B, C; the first four qualify, the others hold
#: one record that does not (an allele from 10, haploid calls)
CHUNKS = [
    ["0|0 0|1 1|1", "1|0 0|0 0|0", "9|9 2|3 0|1"],  # all phased
    ["0/0 0/1 1/1", "./. 0/0 1/0", "./1 1/. ./."],  # unphased, missing
    ["0|1 0/1 ./.", ".|1 1/1 0|0", "2|0 0/2 .|."],  # phase mixed within records
    ["./. ./. ./.", "./. ./. ./.", "./. ./. ./."],  # only missing
    ["0|1 10|0 1|1", "0/0 0/1 1/11", "0|0 0|0 0|0"],  # multi-digit alleles
    ["0 1 .", "0/1 1 0|0", "0|0 0/0 ./."],  # haploid calls (fill after them)
]


def _vcf(tmp_path, fields: str):
    lines = []
    for k, record in enumerate(call for chunk in CHUNKS for call in chunk):
        cells = [f"{gt}:{k}" if fields == "GT:DP" else gt for gt in record.split()]
        lines.append(f"1\t{k + 1}\t.\tA\t{ALTS}\t.\t.\t.\t{fields}\t" + "\t".join(cells))
    vcf = tmp_path / f"{fields.replace(':', '_')}.vcf"
    vcf.write_text(HEADER + "\n".join(lines) + "\n")
    return vcf


@pytest.mark.parametrize("fields", ["GT", "GT:DP"])
def test_gt_fast_and_table_paths_equal_bcftools(convert_once, tmp_path, monkeypatch, fields):
    vcf = _vcf(tmp_path, fields)
    theirs = subprocess.run(["bcftools", "view", "-H", str(vcf)], check=True, capture_output=True,
                            text=True).stdout.splitlines()
    store = convert_once(vcf, variants_chunk_size=3)
    made, dense = [], []
    digit_calls, dense_lines = values._digit_calls, records._dense_lines

    def spy(*args):
        made.append(digit_calls(*args))
        return made[-1]

    def dense_spy(heads, cells, count):
        dense.append(len(heads))
        return dense_lines(heads, cells, count)

    monkeypatch.setattr(values, "_digit_calls", spy)
    monkeypatch.setattr(records, "_dense_lines", dense_spy)
    fast = [line.rstrip("\n") for line in vcf_lines(open_store(store))][1:]
    assert [d is not None for d in made] == [True] * 4 + [False] * 2  # both paths ran
    assert [d is not None and d.phased is not None for d in made[:4]] == [False, False, True, False]
    # lines of cells without padding: GT alone (DP declared, absent), and with DP of one digit
    assert dense == [3] * (4 if fields == "GT" else 3)
    monkeypatch.setattr(values, "_digit_calls", lambda *args: None)
    table = [line.rstrip("\n") for line in vcf_lines(open_store(store))][1:]
    assert len(theirs) == 3 * len(CHUNKS)
    assert fast == theirs
    assert table == theirs
