"""``add`` is atomic: killed (SIGKILL) at any moment, the cohort answers as before; run again,
it completes. Two adds cannot interleave.

Each kill is of a forked child running ``add`` (the parent has imported everything already,
so a kill point costs the add's own work up to that point), at delays spread over the time a
whole add takes here.
"""

from __future__ import annotations

import os
import shutil
import signal
import time

import pytest
from cohort_support import POOL, write_batch

import vcfzarr_sql
from vcfzarr_sql.converter import convert
from vcfzarr_sql.converter.cohort import add
from vcfzarr_sql.converter.output import output_lock
from vcfzarr_sql.errors import OutputError

KILLS = 20
QUERIES = (
    "SELECT * FROM vcf_zarr('{s}')",
    "SELECT * FROM vcf_zarr_calls('{s}', region := '1:1-200')",
    "SELECT * FROM vcf_zarr_sample_stats('{s}')",
)


def _answers(store) -> list:
    con = vcfzarr_sql.connect()
    return [sorted(con.sql(q.format(s=store)).to_arrow_table().to_pylist(), key=repr) for q in QUERIES]


def _killed_add(store, inputs, delay: float) -> bool:
    """Run ``add`` in a forked child and SIGKILL it after ``delay`` seconds; whether the kill
    came before it finished."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            add(store, inputs)
        finally:
            os._exit(0)
    time.sleep(delay)
    os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    return os.WIFSIGNALED(status)


def test_a_killed_add_changes_nothing_and_running_it_again_completes_it(tmp_path):
    base = write_batch(tmp_path / "base.vcf", ["A1", "A2"], POOL[:9], seed=1)
    first = write_batch(tmp_path / "b.vcf", ["B1"], POOL[2:12], seed=2)
    second = write_batch(tmp_path / "c.vcf", ["C1", "C2"], POOL[5:], seed=3, ploidy=1)
    pristine, store = tmp_path / "pristine.vcz", tmp_path / "cohort.vcz"
    convert(base, pristine, variants_chunk_size=3)
    add(pristine, [first])  # (a cohort already: the kills hit a second generation)
    shutil.copytree(pristine, store)
    before = _answers(store)
    started = time.perf_counter()
    add(store, [second])
    took = time.perf_counter() - started
    after = _answers(store)
    assert after != before
    shutil.rmtree(store)
    shutil.copytree(pristine, store)
    kills = attempts = 0
    while kills < KILLS and attempts < 3 * KILLS:
        delay = took * ((attempts * 0.618) % 1.0)
        attempts += 1
        if _killed_add(store, [second], delay):
            kills += 1
            assert _answers(store) == before, f"killed after {delay:.3f} s"
        else:  # (it finished first: start again from the cohort before the add)
            assert _answers(store) == after
            shutil.rmtree(store)
            shutil.copytree(pristine, store)
    assert kills == KILLS
    add(store, [second])
    assert _answers(store) == after


def test_two_adds_cannot_interleave_and_an_open_connection_sees_the_add(tmp_path):
    base = write_batch(tmp_path / "base.vcf", ["A1"], POOL[:4], seed=1)
    other = write_batch(tmp_path / "b.vcf", ["B1"], POOL[2:6], seed=2)
    store = tmp_path / "cohort.vcz"
    convert(base, store)
    with output_lock(store), pytest.raises(OutputError, match="cohort.vcz: another conversion is writing it"):
        add(store, [other])
    con = vcfzarr_sql.connect()
    query = f"SELECT count(*), count(DISTINCT sample_id) FROM vcf_zarr_calls('{store}')"
    assert con.sql(query).fetchall() == [(4, 1)]
    add(store, [other])
    assert con.sql(query).fetchall() == [(6 * 2, 2)]


def test_a_forked_child_does_not_keep_the_lock_of_a_killed_add(tmp_path):
    """add's workers are forked from the process holding the cohort's lock (an ``flock``, which
    belongs to the open file): a child still running when that process is killed must not
    keep the cohort locked (a re-run at once would be refused)."""
    store = tmp_path / "cohort.vcz"
    told, tell = os.pipe()  # (the lock holder: "locked and forked")
    hold, release = os.pipe()  # (the grandchild waits on it until the test closes it)
    holder = os.fork()
    if holder == 0:  # pragma: no cover - the child: holds the lock, forks, is killed
        try:
            with output_lock(store):
                if os.fork() == 0:
                    os.close(release)
                    os.read(hold, 1)
                    os._exit(0)
                os.write(tell, b"x")
                time.sleep(60)
        finally:
            os._exit(1)
    os.close(tell)
    os.close(hold)
    try:
        assert os.read(told, 1) == b"x"
        os.kill(holder, signal.SIGKILL)
        os.waitpid(holder, 0)
        with output_lock(store):  # (while the grandchild is still there)
            pass
    finally:
        os.close(release)
        os.close(told)
