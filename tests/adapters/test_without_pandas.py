"""The core works without pandas (not a dependency; recent pyarrow's ``to_pandas_dtype`` imports it)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from oracle import CORPUS_SAMPLE, records


def test_scan_and_residual_filter_without_pandas(convert_once):
    store = convert_once(CORPUS_SAMPLE)
    script = textwrap.dedent(
        f"""
        import sys

        class NoPandas:  # any import of pandas now fails, as where it is not installed
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] == "pandas":
                    raise ModuleNotFoundError("No module named 'pandas'")

        sys.meta_path.insert(0, NoPandas())
        import vcfzarr_sql
        con = vcfzarr_sql.connect()
        rows = con.sql(
            "SELECT pos, qual, fmt_GT_1 FROM vcf_zarr_calls({str(store)!r}) "
            "WHERE contig = '20' AND qual > 10 AND fmt_GT_1 >= 0 ORDER BY pos, sample_id"
        ).fetchall()
        print(sorted({{p for p, _, _ in rows}}))
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    expected = sorted(
        {r.pos for r in records(CORPUS_SAMPLE) if r.chrom == "20" and r.qual is not None and r.qual > 10}
    )
    assert done.stdout.strip() == str(expected)
