"""``python -m vcfzarr_sql``: the CLI."""

import sys

from vcfzarr_sql.cli import run

sys.exit(run())
