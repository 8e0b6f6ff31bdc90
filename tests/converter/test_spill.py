"""Spilled blocks (``converter/spill.py``): a block held in memory (one worker parses and
encodes) reads back as written, leaves no file, and is dropped on its last read; past the
room a process may hold, blocks go to files as with several workers."""

import numpy as np

from vcfzarr_sql.converter import spill


def _block(rows):
    return {"gt": np.arange(rows * 4, dtype=np.int8).reshape(rows, 2, 2), "pos": np.arange(rows)}


def test_a_held_block_reads_back_without_a_file_and_is_dropped_on_its_last_read(tmp_path):
    path = tmp_path / "b0.blk"
    spill.write_block(path, _block(3), hold=True)
    assert not path.exists()
    for release in (False, True):
        read = spill.read_block(path, release=release)
        assert read.keys() == {"gt", "pos"} and read["gt"].tolist() == _block(3)["gt"].tolist()
    assert str(path) not in spill._held


def test_blocks_past_the_room_are_written_to_files(tmp_path, monkeypatch):
    monkeypatch.setattr(spill, "HOLD_BYTES", _block(3)["gt"].nbytes + _block(3)["pos"].nbytes)
    first, second = tmp_path / "b0.blk", tmp_path / "b1.blk"
    spill.write_block(first, _block(3), hold=True)
    spill.write_block(second, _block(3), hold=True)
    assert not first.exists() and second.exists()
    assert spill.read_block(second, release=True)["pos"].tolist() == [0, 1, 2]
    spill.drop_block(first)
    spill.drop_block(second)
    assert not spill._held and not second.exists()


def test_a_block_written_again_replaces_the_held_one(tmp_path):
    """(the fast path's blocks discarded and read again by htslib's reader)"""
    path = tmp_path / "b0.blk"
    spill.write_block(path, _block(3), hold=True)
    spill.write_block(path, _block(2))
    assert spill.read_block(path, release=True)["pos"].tolist() == [0, 1]
    assert not spill._held


def test_the_objects_of_object_columns_count_against_the_room(tmp_path, monkeypatch):
    """IDs and alleles are Python strings: a block's pointers are a third of what it keeps
    alive, so counting ``nbytes`` alone held ~3x the bound (review of stop 36)."""
    ids = np.array([f"rs{k:048d}" for k in range(100)], object)  # 8-byte pointers, ~100-byte strings
    monkeypatch.setattr(spill, "HOLD_BYTES", 2 * ids.nbytes)
    path = tmp_path / "b0.blk"
    spill.write_block(path, {"id": ids}, hold=True)
    assert path.exists() and not spill._held
    assert spill.read_block(path, release=True)["id"].tolist() == ids.tolist()
