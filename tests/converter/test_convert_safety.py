"""``convert`` is safe with user data (issue 12): ``--force`` replaces only a VCF Zarr store,
never the input, the working directory, a parent of either or an unrelated folder; OUTPUT is
never a partial store whenever the run dies; a second converter to the same OUTPUT fails with
one line; workers die with their parent; OS errors are one line naming the path.

Expected record counts come from the VCF text the tests write (3 records, see test_converter).
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import subprocess
import sys
import textwrap
import time
import zlib
from pathlib import Path

import pytest
from test_converter import write_vcf

from vcfzarr_sql import cli
from vcfzarr_sql.converter import convert, output
from vcfzarr_sql.errors import OutputError, StoreError
from vcfzarr_sql.store import open_store

RECORDS = 3  # in write_vcf's body


def one_line_cli(capsys, *args: str) -> tuple[int, str]:
    code = cli.main(["convert", *args, "--quiet"])
    err = capsys.readouterr().err
    assert len(err.splitlines()) <= 1, err
    return code, err.strip()


def is_complete(store: Path) -> bool:
    with open_store(store) as opened:
        return opened.num_variants == RECORDS and len(opened.read_array("variant_id")) == RECORDS


@pytest.fixture
def vcf(tmp_path) -> Path:
    return write_vcf(tmp_path / "in.vcf")


# ---------------------------------------------------------------------------------------------
# What --force may replace


def test_force_replaces_an_existing_store(vcf, tmp_path):
    out = tmp_path / "out.vcz"
    convert(vcf, out, show_progress=False, variants_chunk_size=2)
    convert(vcf, out, force=True, show_progress=False)
    assert is_complete(out)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.vcf", "out.vcz"]


@pytest.mark.parametrize("target", [".", "..", "in.vcf", "junk", "link"])
def test_force_never_replaces_what_is_not_a_store(vcf, tmp_path, monkeypatch, capsys, target):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "thesis.tex").write_text("years of work")
    convert(vcf, tmp_path / "store.vcz", show_progress=False)
    (tmp_path / "link").symlink_to(tmp_path / "store.vcz")
    before = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*"))
    code, err = one_line_cli(capsys, "in.vcf", target, "--force")
    assert code == 1 and err.startswith(f"error: {target}: ")
    assert "refusing to replace it" in err or "replaces only a VCF Zarr store" in err
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*")) == before


@pytest.mark.parametrize("planted", ["notes.txt", "variant_position/README", ".hidden",
                                     "results/table.csv", "variant_id/link"])
def test_force_never_deletes_a_file_a_user_put_inside_a_store(vcf, tmp_path, capsys, planted):
    """Issue 23 (9): --force deleted the whole folder, with what a user had put inside."""
    out = tmp_path / "out.vcz"
    convert(vcf, out, show_progress=False, variants_chunk_size=2)
    path = out / planted
    path.parent.mkdir(exist_ok=True)
    if planted.endswith("link"):
        path.symlink_to(vcf)
    else:
        path.write_text("mine")
    before = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*"))
    code, err = one_line_cli(capsys, str(vcf), str(out), "--force")
    assert code == 1
    assert err == (f"error: {out}: holds {planted}, which is not part of a Zarr store; --force "
                   "deletes only a store's own files (move it out, or remove the store "
                   "yourself)"), err
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*")) == before
    path.unlink()
    assert one_line_cli(capsys, str(vcf), str(out), "--force") == (0, "")  # a store's own files only
    assert is_complete(out)


def test_force_never_replaces_a_store_holding_the_input(tmp_path):
    store = tmp_path / "s.vcz"
    convert(write_vcf(tmp_path / "in.vcf"), store, show_progress=False)
    inside = write_vcf(store / "in.vcf")
    with pytest.raises(OutputError, match="holds the input file"):
        convert(inside, store, force=True, show_progress=False)
    assert inside.exists() and is_complete(store)


def test_force_never_replaces_the_working_directory_even_if_a_store(vcf, tmp_path, monkeypatch):
    store = tmp_path / "s.vcz"
    convert(vcf, store, show_progress=False)
    monkeypatch.chdir(store / "variant_position")
    with pytest.raises(OutputError, match="working directory"):
        convert(vcf, store, force=True, show_progress=False)
    assert is_complete(store)


# ---------------------------------------------------------------------------------------------
# OUTPUT is never a partial store, wherever the run stops


class Died(BaseException):
    """Stands for SIGKILL at a given point: nothing of the run's own code runs after it
    except ``finally`` blocks, which only remove the run's hidden work folder."""


@pytest.mark.parametrize("step", [0, 1])  # dies after renaming the old store aside / the new in
def test_dying_during_the_swap_leaves_a_complete_store_or_none(vcf, tmp_path, monkeypatch, step):
    out = tmp_path / "out.vcz"
    convert(vcf, out, show_progress=False, variants_chunk_size=2)
    renames = []
    real_rename = os.rename

    def rename(src, dst):
        real_rename(src, dst)
        renames.append(dst)
        if len(renames) > step:
            raise Died

    monkeypatch.setattr(output.os, "rename", rename)
    with pytest.raises(Died):
        convert(vcf, out, force=True, show_progress=False)
    monkeypatch.undo()
    if step == 0:
        assert not out.exists()  # absent, not partial: the old store is aside, whole
        [aside] = [p for p in tmp_path.iterdir() if p.name.endswith(".replaced")]
        assert is_complete(aside)
        with pytest.raises(OutputError, match="already exists"):  # the next run puts it back
            convert(vcf, out, show_progress=False)
    assert is_complete(out)
    convert(vcf, out, force=True, show_progress=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.vcf", "out.vcz"]


def test_a_delete_cut_short_leaves_nothing_that_opens_as_a_store(vcf, tmp_path, monkeypatch):
    out = tmp_path / "out.vcz"
    convert(vcf, out, show_progress=False)
    monkeypatch.setattr(output.shutil, "rmtree", lambda path: (_ for _ in ()).throw(Died))
    with pytest.raises(Died):
        output.delete_store(out)
    assert (out / "variant_id").exists()
    with pytest.raises(StoreError):
        open_store(out)
    assert not output.is_vcf_zarr_directory(out)


def test_leftovers_of_killed_runs_are_removed_by_the_next_run(vcf, tmp_path):
    for name in (".out.vcz.abc123.tmp", ".out.vcz.4242.replaced"):  # .replaced: half deleted
        (tmp_path / name / "store").mkdir(parents=True)
    (tmp_path / ".other.vcz.x.tmp").mkdir()  # another OUTPUT's: not ours to touch
    convert(vcf, tmp_path / "out.vcz", show_progress=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == [".other.vcz.x.tmp", "in.vcf", "out.vcz"]


# ---------------------------------------------------------------------------------------------
# One converter per OUTPUT


def test_a_second_converter_to_the_same_output_fails_with_one_line(vcf, tmp_path, capsys):
    out = tmp_path / "out.vcz"
    convert(vcf, out, show_progress=False)
    with output.output_lock(out):
        code, err = one_line_cli(capsys, str(vcf), str(out), "--force")
        assert code == 1 and err.startswith(f"error: {out}: another conversion is writing it")
    assert is_complete(out)
    assert not output.lock_path(out).exists()
    assert one_line_cli(capsys, str(vcf), str(out), "--force") == (0, "")


@pytest.mark.slow
def test_two_concurrent_cli_converters_one_wins_one_fails(tmp_path):
    big = Path(__file__).parents[1] / (
        "data/corpus/vcflib+vcflib/samples/1kg-phaseIII-v5a.20130502.genotypes.chr22-16-16.5mb.vcf.gz")
    out = tmp_path / "out.vcz"
    command = [sys.executable, "-m", "vcfzarr_sql", "convert", str(big), str(out), "-q"]
    first = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not output.lock_path(out).exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    second = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert first.stderr is not None
    assert first.wait(timeout=120) == 0, first.stderr.read()
    assert second.returncode == 1
    assert second.stderr.splitlines() == [
        f"error: {out}: another conversion is writing it (lock {output.lock_path(out)})"]
    with open_store(out) as store:
        assert store.num_variants > 0


# ---------------------------------------------------------------------------------------------
# Workers die with their parent

_PARENT = textwrap.dedent("""
    import signal, sys, time
    from vcfzarr_sql.converter.workers import WorkerPool
    if __name__ == "__main__":
        signal.signal(signal.SIGHUP, signal.SIG_DFL)  # (a test run under nohup ignores it)
        pool = WorkerPool("in.vcf", 2, sys.argv[1])
        futures = [pool.executor.submit(time.sleep, 600) for _ in range(2)]
        time.sleep(1)
        print(" ".join(map(str, pool.executor._processes)), flush=True)
        time.sleep(600)
""")


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[1][0] != "Z"  # a zombie is dead
    except FileNotFoundError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM, signal.SIGHUP])
def test_workers_die_with_their_parent(tmp_path, sig):
    parent = subprocess.Popen([sys.executable, "-c", _PARENT, str(tmp_path)],
                              stdout=subprocess.PIPE, text=True)
    assert parent.stdout is not None
    workers = [int(p) for p in parent.stdout.readline().split()]
    assert len(workers) == 2 and all(_alive(p) for p in workers)
    parent.send_signal(sig)
    parent.wait(timeout=30)
    deadline = time.monotonic() + 10
    while any(_alive(p) for p in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_alive(p) for p in workers)


@pytest.mark.slow
def test_sigterm_of_the_cli_cleans_up_and_says_so_in_one_line(tmp_path):
    big = Path(__file__).parents[1] / (
        "data/corpus/vcflib+vcflib/samples/1kg-phaseIII-v5a.20130502.genotypes.chr22-16-16.5mb.vcf.gz")
    out = tmp_path / "out.vcz"
    run = subprocess.Popen([sys.executable, "-m", "vcfzarr_sql", "convert", str(big), str(out),
                            "-q", "-w", "2"], stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not any(p.name.endswith(".tmp") for p in tmp_path.iterdir()):
        assert time.monotonic() < deadline and run.poll() is None
        time.sleep(0.05)
    time.sleep(0.5)
    run.send_signal(signal.SIGTERM)
    assert run.wait(timeout=60) == 1
    assert run.stderr is not None
    lines = [line for line in run.stderr.read().splitlines() if line.startswith("error:")]
    assert lines == [f"error: {out}: conversion stopped by SIGTERM; OUTPUT was left as it was"]
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------------------------------------
# OS errors: one line naming the path, never blaming the input


@contextlib.contextmanager
def tmpfs(where: Path, options: str):
    where.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(where)],
                             capture_output=True)
    if mounted.returncode != 0:
        pytest.skip("cannot mount a tmpfs here (needs root)")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=True)


def test_read_only_folder_is_one_line_naming_it(vcf, tmp_path, capsys):
    with tmpfs(tmp_path / "ro", "ro,size=1m") as ro:
        code, err = one_line_cli(capsys, str(vcf), str(ro / "out.vcz"))
        assert code == 1 and err.startswith(f"error: {ro}/") and "Read-only file system" in err
        assert str(vcf) not in err


@pytest.mark.parametrize("workers", ["1", "2"])
def test_full_disk_is_one_line_naming_the_output_and_leaves_nothing(tmp_path, capsys, workers):
    big = Path(__file__).parents[1] / "data/corpus/sgkit-dev+bio2zarr/tests/data/vcf/sample.vcf.gz"
    with tmpfs(tmp_path / "full", "size=48k") as full:
        code, err = one_line_cli(capsys, str(big), str(full / "out.vcz"), "-w", workers,
                                 "--variants-chunk-size", "1")
        assert code == 1 and err.startswith(f"error: {full}/") and "No space left" in err, err
        assert str(big) not in err
        assert list(full.iterdir()) == []


def test_write_error_without_a_file_name_names_the_output(vcf, tmp_path, monkeypatch):
    import vcfzarr_sql.converter as converter

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(converter, "write_whole", full)
    with pytest.raises(OutputError, match=f"^{tmp_path / 'out.vcz'}: No space left on device$"):
        convert(vcf, tmp_path / "out.vcz", show_progress=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.vcf"]


def _gzip_bomb(path: Path, line_bytes: int) -> None:
    """A gzipped VCF whose third record is one line of ``line_bytes`` (written as a stream:
    about 4 MB on disk a GB)."""
    z = zlib.compressobj(1, zlib.DEFLATED, 31)
    chunk = b"a" * (1 << 22)
    with open(path, "wb") as f:
        f.write(z.compress(b'##fileformat=VCFv4.2\n##contig=<ID=1>\n'
                           b'##INFO=<ID=X,Number=1,Type=String,Description="x">\n'
                           b"#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\n"
                           b"1\t1\t.\tA\tC\t.\t.\tX=a\n1\t2\t.\tA\tC\t.\t.\tX=a\n1\t3\t.\tA\tC\t.\t.\tX="))
        for _ in range(line_bytes // len(chunk)):
            f.write(z.compress(chunk))
        f.write(z.compress(b"\n1\t4\t.\tA\tC\t.\t.\tX=a\n"))
        f.write(z.flush())


@pytest.mark.parametrize("workers", [1, 2])
def test_a_line_bigger_than_the_workers_memory_is_one_line_naming_the_record(tmp_path, capsys, workers):
    """Issue 23 item 9: htslib grows its line buffer without bound (a 6 GB single-line gzip
    bomb took the machine, then failed with ``bcf_read error-code: 0 and ret: -3``). Workers
    run under --max-memory; the refused allocation names the file and the record, and leaves
    no store."""
    bomb = tmp_path / "bomb.vcf.gz"
    _gzip_bomb(bomb, 1 << 30)
    out = tmp_path / "out.vcz"
    code, err = one_line_cli(capsys, str(bomb), str(out), "--max-memory", "256MiB", "--workers", str(workers))
    assert code != 0
    assert err.endswith(f"{bomb}: a line longer than the parser's memory allows "
                        f"(--max-memory, {256 << 20} bytes) at record 3"), err
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["bomb.vcf.gz"]


def test_the_memory_bound_is_a_size(tmp_path, capsys) -> None:
    vcf = write_vcf(tmp_path / "in.vcf")
    code, err = one_line_cli(capsys, str(vcf), str(tmp_path / "out.vcz"), "--max-memory", "lots")
    assert code != 0 and "'lots' is not a memory size" in err, err


def test_an_htslib_read_error_names_the_record(tmp_path, capsys) -> None:
    """cyvcf2's bare ``bcf_read`` errors (a record of one column, the gzip bomb at its end)
    name the record they stopped at; the first record is fine."""
    vcf = tmp_path / "in.vcf"
    vcf.write_text("##fileformat=VCFv4.2\n##contig=<ID=1>\n#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\n"
                   "1\t1\t.\tA\tC\t.\t.\t.\n1\n")
    code, err = one_line_cli(capsys, str(vcf), str(tmp_path / "out.vcz"))
    assert code != 0 and f"{vcf}: " in err and "bcf_read" in err and err.endswith(" at record 2"), err
