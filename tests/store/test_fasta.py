"""Reference bases (``store/fasta.py``) with and without the ``.fai`` index equal the sequence
written, ``N`` outside it, and an unreadable file is a one-line error."""

from __future__ import annotations

import shutil

import pytest
from gvcf_support import write_reference

from vcfzarr_sql.errors import VcfZarrError
from vcfzarr_sql.store.fasta import Fasta


def test_bases_with_and_without_the_index(tmp_path):
    sequences = write_reference(tmp_path / "ref.fa")  # (60 bases a line, and its .fai)
    shutil.copy(tmp_path / "ref.fa", tmp_path / "plain.fa")  # (no .fai beside it)
    indexed, plain = Fasta(tmp_path / "ref.fa"), Fasta(tmp_path / "plain.fa")
    for contig, sequence in sequences.items():
        for position in (1, 59, 60, 61, 120, 121, len(sequence)):
            assert indexed.base(contig, position) == plain.base(contig, position) == sequence[position - 1]
        assert indexed.base(contig, len(sequence) + 1) == plain.base(contig, 0) == "N"
    assert indexed.base("nowhere", 5) == plain.base("nowhere", 5) == "N"


def test_a_missing_file_is_one_line_error(tmp_path):
    with pytest.raises(VcfZarrError, match="cannot read it as a FASTA reference") as error:
        Fasta(tmp_path / "absent.fa")
    assert "\n" not in str(error.value)
