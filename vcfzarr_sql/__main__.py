"""``python -m vcfzarr_sql``: the CLI."""

import sys

from vcfzarr_sql.cli import main

sys.exit(main())
