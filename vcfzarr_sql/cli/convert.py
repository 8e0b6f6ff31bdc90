"""``vcfzarr-sql convert INPUT OUTPUT``: VCF/BCF -> VCF Zarr (a thin wrapper of :func:`convert`)."""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator
from types import FrameType
from typing import NoReturn

import click

from vcfzarr_sql.cli import options
from vcfzarr_sql.errors import OutputError


@contextlib.contextmanager
def _stopped_by_signals(output: str) -> Iterator[None]:
    """SIGTERM and SIGHUP raise a one-line error, so that the conversion cleans up after itself
    (kills its workers, removes its work folder) instead of dying where it stands."""

    def stop(signum: int, frame: FrameType | None) -> NoReturn:
        name = signal.Signals(signum).name
        raise OutputError(f"{output}: conversion stopped by {name}; OUTPUT was left as it was")

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _inputs_and_output(paths: tuple[str, ...]) -> tuple[list[str], str]:
    """INPUT... and OUTPUT; a usage error saying which is missing (click would name INPUTS
    when only OUTPUT is: it fills OUTPUT first)."""
    if not paths:
        raise click.UsageError("Missing arguments INPUT... OUTPUT: the VCF/BCF file(s) to convert "
                               "and the store to write.")
    if len(paths) == 1:
        raise click.UsageError(f"Missing argument OUTPUT: the store to write {paths[0]} into "
                               f"(vcfzarr-sql convert {paths[0]} OUTPUT).")
    for path in paths[:-1]:
        if os.path.isdir(path):
            raise click.BadParameter(f"File {path!r} is a directory.", param_hint="'INPUT...'")
    return list(paths[:-1]), paths[-1]


@click.command("convert")
@click.argument("paths", nargs=-1, metavar="INPUT... OUTPUT",
                type=click.Path(dir_okay=True, allow_dash=True))
@options.variants_chunk_size
@options.samples_chunk_size
@options.workers
@click.option("--max-memory", metavar="SIZE",
              help="Memory each worker process may allocate (300MB, 2GiB...); a record the "
                   "parser cannot hold within it is an error naming the file and the record "
                   "[default: 3/4 of the machine's memory, divided among the workers].")
@options.force
@options.quiet
def command(paths: tuple[str, ...], variants_chunk_size: int, samples_chunk_size: int,
            workers: int, max_memory: str | None, force: bool, quiet: bool) -> None:
    """Convert VCF, bgzipped VCF or BCF INPUT files to a VCF Zarr store OUTPUT.

    Several INPUTs (per-chromosome files, say) become one store, as their concatenation;
    their headers must agree. INPUT ``-`` reads standard input. Prints a one-line summary.
    With --force, an existing VCF Zarr store at OUTPUT is replaced (only a store: never an
    input, the working directory or another folder) once the new one is complete. --force
    deletes the old store's folder whole, so it refuses one holding anything but Zarr
    metadata and chunks (a file you put inside, a link): move that out first.
    """
    from vcfzarr_sql.converter import convert
    from vcfzarr_sql.serve.memory import parse_size

    inputs, output = _inputs_and_output(paths)

    with _stopped_by_signals(output):
        summary = convert(
            inputs,
            output,
            variants_chunk_size=variants_chunk_size,
            samples_chunk_size=samples_chunk_size,
            workers=workers,
            force=force,
            max_memory=None if max_memory is None else parse_size(max_memory),
            show_progress=False if quiet else None,
        )
    if not quiet:
        click.echo(f"{output}: {summary}", err=True)
