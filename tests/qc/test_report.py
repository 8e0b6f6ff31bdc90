"""``stats -o report.html`` / ``--plot DIR``: one self-contained page whose every plot loads in a
real browser (headless Chromium, the Debian package) with its title and axes labelled, and the
PNGs beside it; and the numbers the extra plots show, against hand counts."""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import numpy as np
import pytest
from click.testing import CliRunner
from qc_simulate import qc_vcf

from vcfzarr_sql.cli import cli
from vcfzarr_sql.qc import collect
from vcfzarr_sql.store import open_store
from vcfzarr_sql.view import Selection

pytest.importorskip("matplotlib")
CHROMIUM = shutil.which("chromium")

#: Run in the page once it has loaded: every image's state and labels, as JSON in a <pre>.
CHECK = """<script>
window.addEventListener("load", () => {
  const found = [...document.images].map(img => ({
    id: img.closest("figure").id, width: img.naturalWidth, height: img.naturalHeight,
    complete: img.complete, alt: img.alt, x: img.dataset.xlabel, y: img.dataset.ylabel,
    caption: img.closest("figure").querySelector("figcaption").textContent,
  }));
  const out = document.createElement("pre");
  out.id = "check";
  out.textContent = JSON.stringify(found);
  document.body.appendChild(out);
});
</script>"""


@pytest.fixture(scope="module")
def store(tmp_path_factory, convert_once):
    root = tmp_path_factory.mktemp("qc_report")
    return convert_once(qc_vcf(root / "qc.vcf", seed=7, records=60, samples=8), variants_chunk_size=20)


def test_report_and_pngs(store, tmp_path):
    result = CliRunner().invoke(cli, ["stats", str(store), "-s", "-", "-o", str(tmp_path / "qc.html")])
    assert result.exit_code == 0, result.output
    page = (tmp_path / "qc.html").read_text()
    sources = re.findall(r'<img src="([^"]*)"', page)
    assert len(sources) == 11 and all(s.startswith("data:image/png;base64,") for s in sources)
    assert not re.search(r'(src|href)="(?!data:)', page)  # (nothing outside the page)
    pngs = sorted(p.name for p in tmp_path.glob("qc-*.png"))
    assert pngs == sorted(f"qc-{name}.png" for name in re.findall(r'<figure id="([^"]+)"', page))
    assert all(p.read_bytes().startswith(b"\x89PNG") for p in tmp_path.glob("*.png"))


@pytest.mark.skipif(CHROMIUM is None, reason="needs Debian chromium")
def test_every_plot_loads_in_chromium(store, tmp_path):
    CliRunner().invoke(cli, ["stats", str(store), "-s", "-", "--plot", str(tmp_path)], catch_exceptions=False)
    page = tmp_path / "report.html"
    assert len(list(tmp_path.glob("*.png"))) == 11  # (--plot DIR: the PNGs in DIR)
    checked = tmp_path / "checked.html"
    checked.write_text(page.read_text().replace("</body>", CHECK + "</body>"))
    done = subprocess.run(
        [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=5000",
         "--dump-dom", checked.as_uri()],
        capture_output=True, text=True, timeout=120,
    )
    found = re.search(r'<pre id="check">(.*?)</pre>', done.stdout, re.S)
    assert found, done.stderr[-2000:]
    images = json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&"))
    assert len(images) == 11
    for image in images:
        assert image["complete"] and image["width"] == 640 and image["height"] == 400, image
        assert image["x"] and image["y"] and image["caption"], image
        assert image["alt"].endswith(f"x = {image['x']}, y = {image['y']}"), image


def test_call_rates_and_hwe_p_values(store):
    from vcfzarr_sql.qc.report import call_rates, hwe_p_values
    from vcfzarr_sql.query.stats_totals import SAMPLE_ROW

    counted = collect(open_store(store), Selection(samples="s0,s3"))
    s = counted.totals.samples
    rate, het = call_rates(counted.totals)
    assert rate.tolist() == [1 - m / 60 for m in s[SAMPLE_ROW["missing"]]]
    diploid = s[SAMPLE_ROW["hom_ref"]] + s[SAMPLE_ROW["hom_alt"]] + s[SAMPLE_ROW["het"]]
    assert het.tolist() == (s[SAMPLE_ROW["het"]] / diploid).tolist()
    p = hwe_p_values(counted.totals)
    assert len(p) and ((p > 0) & (p <= 1)).all()
    # hand fact: one hom ref and one hom alt call (no het) is HWE p = 1/3 (of the two tables
    # with two ALT alleles in two samples, no het has probability 1/3, two hets 2/3)
    counted.totals.genotype_counts[:] = [np.array([[1, 0, 1]])]
    assert np.isclose(hwe_p_values(counted.totals), [1 / 3]).all()
