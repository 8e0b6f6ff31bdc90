"""The exception hierarchy: every error we raise on purpose is a :class:`VcfZarrError`."""

from __future__ import annotations


class VcfZarrError(ValueError):
    """Base class of every error vcfzarr-sql raises on purpose.

    ``str(err)`` is one line a user can act on; the CLI prints it as ``error: <message>``.
    """


class VcfParseError(VcfZarrError):
    """A VCF/BCF input could not be read: names the file and, where known, record and field."""

    def __init__(self, path: str, what: str, *, record: str | None = None, field: str | None = None):
        self.path = str(path)
        self.what = what
        self.record = record
        self.field = field
        where = "".join(
            [f" at record {record}" if record else "", f" in field {field}" if field else ""]
        )
        super().__init__(f"{self.path}: {what}{where}")


class NotVcfError(VcfParseError):
    """An input is no VCF or BCF at all (empty, other text, other compressed data): the message
    says why in the user's terms, which htslib's (``Failed to open file``) do not."""


class StoreError(VcfZarrError):
    """A path is missing, is not a VCF Zarr store, or holds an array that breaks the spec."""


class QueryError(VcfZarrError):
    """A query argument is wrong: bad region string, unknown sample, unknown parameter, bad type."""


class AccessError(VcfZarrError):
    """A path or URL that a server does not serve (outside its data directories)."""


class NotSupportedError(VcfZarrError):
    """A feature that vcfzarr-sql does not implement (yet); the message says which."""


class VcfZarrWarning(UserWarning):
    """Something the user should know that does not stop the work (the CLI prints ``warning: ...``)."""


class OutputError(VcfZarrError):
    """An output cannot be written or replaced (exists, locked, permission, disk full...): the
    message names the path, never blaming the input."""
