"""``vcfzarr-sql validate STORE``: list every way a store breaks the VCF Zarr spec."""

from __future__ import annotations

import click

from vcfzarr_sql.cli import options
from vcfzarr_sql.errors import StoreError


@click.command("validate")
@options.store_path
@options.deep
def command(store: str, deep: bool) -> None:
    """Check STORE against the VCF Zarr spec of the version it declares.

    Prints one line per problem (and a ``note:`` line per field kept with a mask array);
    exits 0 only if there is no problem. With --deep, every chunk is decoded and checked against
    its array (size, dtype, codec; none missing that cannot be).
    """
    from vcfzarr_sql.validation import notes, validate

    problems = validate(store, deep=deep)
    for note in notes(store):
        click.echo(f"note: {note}")
    for problem in problems:
        click.echo(str(problem))
    if problems:
        raise StoreError(f"{store}: {len(problems)} problem(s) with the VCF Zarr spec")
    click.echo(f"{store}: valid VCF Zarr")
