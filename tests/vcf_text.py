"""VCF text as ``view`` and bcftools write it, normalised for what a VCF Zarr store does not keep.

One normalisation each (docs/reference.md, ``view``): the order of INFO and FORMAT keys within
a record (the store keeps header order), keys present in a record with only missing values (the
store cannot tell them from an absent key: ``view`` writes GT always and other keys when a
sample has a value; both sides drop such keys), and the ``##bcftools_view`` header lines.
"""

from __future__ import annotations

_MISSING_MARKS = str.maketrans("", "", ".,/|")


def _has_value(cells: list[str]) -> bool:
    """Whether a cell has a character other than the missing-value marks ``.,/|``."""
    return any(cell.translate(_MISSING_MARKS) for cell in cells)


def normalised(text: str) -> list[str]:
    """The lines of ``text``, each record's INFO and FORMAT keys sorted and empty ones dropped."""
    out = []
    for line in text.splitlines():
        if line.startswith("##bcftools_view"):
            continue
        if not line.startswith("#"):
            cols = line.split("\t")
            info = [kv for kv in cols[7].split(";") if set(kv.partition("=")[2]) - {".", ","} or "=" not in kv]
            cols[7] = ";".join(sorted(info)) or "."
            if len(cols) > 9 and ":" not in cols[8] and not any(":" in c for c in cols[9:]):
                # one key (GT, as in the large files): each cell is its value, kept whole
                # unless no cell has one (the general case below, without its lists)
                if not _has_value(cols[9:]):
                    cols[8:] = [""] * (len(cols) - 8)
            elif len(cols) > 9:
                keys = cols[8].split(":")
                cells = [(c.split(":") + ["."] * len(keys))[: len(keys)] for c in cols[9:]]
                keep = sorted(
                    (k for k in range(len(keys)) if any(set(c[k]) - set(".,/|") for c in cells)),
                    key=lambda k: keys[k],
                )
                cols[8] = ":".join(keys[k] for k in keep)
                cols[9:] = [":".join(c[k] for k in keep) for c in cells]
            line = "\t".join(cols)
        out.append(line)
    return out
