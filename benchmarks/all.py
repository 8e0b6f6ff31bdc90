"""Every suite in order (conversion first: it writes the stores the query suites read).

    python -m benchmarks.all --size quick
"""

from __future__ import annotations

from benchmarks import aggregates, convert, regions
from benchmarks.data import generate
from benchmarks.harness import suite_arguments
from benchmarks.sizes import SIZES


def main(argv: list[str] | None = None) -> None:
    args = suite_arguments(__doc__.splitlines()[0], argv)
    generate(SIZES[args.size])
    for suite in (convert, regions, aggregates):
        suite.main(["--size", args.size, *(f"--skip={tool}" for tool in args.skip)])


if __name__ == "__main__":
    main()
