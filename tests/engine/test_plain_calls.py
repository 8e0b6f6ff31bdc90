"""Calls that take one plain string are rewritten without sqlglot (a CLI process does not
import it for them), exactly as the tokenizer's rewrite does; any other text is left to it."""

from __future__ import annotations

import pytest

from vcfzarr_sql.engine.plain_calls import plain_rewrite
from vcfzarr_sql.engine.rewrite import _rewrite
from vcfzarr_sql.engine.scan_defaults import ScanDefaults

#: texts read here (each must give the tokenizer's answer)
PLAIN = [
    "SELECT count(*) AS records, sum(gt_AC[1]) AS ac FROM vcf_zarr('/d/x.zarr')",
    "SELECT * FROM vcf_zarr('/d/x.zarr') WHERE contig = '1' AND pos < 10",
    "select * from VCF_ZARR ( '/d/x.zarr' ) as v",
    "SELECT * FROM vcf_zarr('/d/x.zarr');",
    "SELECT * FROM vcf_zarr('/d/x.zarr') JOIN vcf_zarr_samples('/d/x.zarr') USING (pos)",
    "SELECT * FROM vcf_zarr('/d/x.zarr'), vcf_zarr_contigs('/d/y.zarr') AS c",
    "SELECT * FROM (SELECT pos FROM vcf_zarr('/d/x.zarr')) ORDER BY 1",
    "SELECT * FROM vcf_zarr('/d/x.zarr')\nGROUP BY ALL",
    "SELECT 'vcf_zarr(''x'')' AS s, vcf_zarr.pos FROM vcf_zarr('/d/x.zarr') LIMIT 1",
    "SELECT * FROM vcf_zarr('rel/x.zarr') UNION ALL SELECT * FROM vcf_zarr('~/x.zarr')",
    "EXPLAIN SELECT * FROM vcf_zarr('/d/x.zarr')",
    "CREATE VIEW v AS SELECT * FROM vcf_zarr('/d/x.zarr')",
    "SELECT count(*) FROM vcf_zarr_calls('/d/x.zarr') WHERE gt = 1",
    "SELECT (SELECT count(*) FROM vcf_zarr('/d/x.zarr')) AS n",
]
#: texts left to the tokenizer
LEFT = [
    "SELECT * FROM vcf_zarr('/d/x.zarr', region := '1')",
    "SELECT * FROM vcf_zarr('/d/*.zarr')",
    "SELECT * FROM vcf_zarr(['/d/x.zarr', '/d/y.zarr'])",
    "SELECT * FROM vcf_zarr('/d/x.zarr') v",
    "SELECT * FROM vcf_zarr('/d/x.zarr') -- a comment",
    "SELECT * FROM vcf_zarr('/d/x.zarr') WHERE s = E'a\\'b'",
    'SELECT "vcf_zarr" FROM vcf_zarr(\'/d/x.zarr\')',
    "SELECT * FROM vcf_zarr(?)",
    "SELECT * FROM vcf_zarr('it''s.zarr')",
    "SELECT * FROM main.vcf_zarr('/d/x.zarr')",
    "SELECT * FROM vcf_zarr('/d/x.zarr' || '')",
    "SELECT 'not closed FROM vcf_zarr('/d/x.zarr')",
    "SELECT 1",
]


@pytest.mark.parametrize("defaults", [None, ScanDefaults(region="1:1-10", samples=("NA1",)),
                                      ScanDefaults(base="/base")])
def test_what_it_reads_it_rewrites_as_the_tokenizer_does(defaults) -> None:
    for sql in PLAIN:
        plain = plain_rewrite(sql, defaults)
        assert plain is not None, sql
        slow = _rewrite(sql, None, defaults)
        assert plain == (slow.sql, slow.relations), sql


def test_anything_else_is_left_to_the_tokenizer() -> None:
    for sql in LEFT:
        assert plain_rewrite(sql) is None, sql
