"""Ratio tables (Markdown + JSON under benchmarks/results/) and one plot per suite (docs/img/)."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from collections.abc import Callable, Sequence
from importlib import metadata
from pathlib import Path

from benchmarks.harness import OURS, Measurement, suite_arguments
from benchmarks.sizes import RESULTS_DIR, SIZES, Size

IMG_DIR = Path(__file__).parent.parent / "docs" / "img"


def ratio(result: Measurement, ours: Measurement | None) -> float | None:
    """Tool time / our time (above 1: we are faster)."""
    if ours is None or not ours.ok or not result.ok or not ours.median or result.median is None:
        return None
    return result.median / ours.median


def short_status(result: Measurement) -> str:
    """The status word of a result that has no time ("not available", "failed", "wrong answer")."""
    return result.status.split(":", 1)[0]


def cell(result: Measurement, ours: Measurement | None) -> str:
    if not result.ok:
        return short_status(result)
    r = ratio(result, ours)
    seconds = f"{result.median:.3f} s"
    return seconds if r is None or result.tool == OURS else f"**{r:.2f}x** ({seconds})"


def ratio_table(results: Sequence[Measurement]) -> str:
    """Markdown: one row per task, one column per tool; cells are tool time / our time."""
    tasks = list(dict.fromkeys(r.task for r in results))
    tools = list(dict.fromkeys(r.tool for r in results))
    by_key = {(r.task, r.tool): r for r in results}
    lines = ["| task | " + " | ".join(tools) + " |", "|---" * (len(tools) + 1) + "|"]
    for task in tasks:
        ours = by_key.get((task, OURS))
        cells = [cell(by_key[task, tool], ours) if (task, tool) in by_key else "" for tool in tools]
        lines.append(f"| {task} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def notes(results: Sequence[Measurement]) -> str:
    """What each tool ran, then why any cell has no time."""
    notes_of: dict[str, set[str]] = {}
    for r in results:
        notes_of.setdefault(r.tool, set()).add(r.note)
    lines = dict.fromkeys(
        f"- {r.tool}: {r.note}" if len(notes_of[r.tool]) == 1 else f"- {r.tool} ({r.task}): {r.note}"
        for r in results if r.note
    )
    tasks_of: dict[tuple[str, str], list[str]] = {}
    for r in results:
        if not r.ok:
            tasks_of.setdefault((r.tool, r.status), []).append(r.task)
    for (tool, status), tasks in tasks_of.items():
        where = "every task" if len(tasks) == len({r.task for r in results}) > 1 else ", ".join(tasks)
        lines[f"- {tool} ({where}): {status}"] = None
    return "\n".join(lines)


def tool_version(argv: Sequence[str]) -> str:
    try:
        out = subprocess.run(list(argv), capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired):
        return "not installed"
    return out.strip().splitlines()[0] if out.strip() else "unknown"


def package_version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"


def environment() -> dict[str, str]:
    """Machine and versions of every tool measured."""
    with open("/proc/meminfo") as meminfo:
        memory_kb = int(meminfo.readline().split()[1])
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")), "")
    env = {
        "cpus (nproc)": str(os.cpu_count()),
        "cpu": cpu,
        "memory": f"{memory_kb / 2**20:.1f} GiB",
        "os": platform.platform(),
        "python": sys.version.split()[0],
        "bcftools": tool_version(["bcftools", "--version"]),
        "vcfzarr-sql commit": tool_version(["git", "-C", str(Path(__file__).parent), "describe", "--always", "--dirty"]),
    }
    for name in ["vcfzarr-sql", "duckdb", "pyarrow", "numpy", "numcodecs", "zarr", "bio2zarr", "vcztools",
                 "polars-bio", "polars", "cyvcf2", "msprime", "tskit"]:
        env[name] = package_version(name)
    return env


def write(suite: str, size: str, results: Sequence[Measurement], preamble: str = "", extra_tables: str = "") -> Path:
    """Write results/<suite>-<size>.{json,md}; return the Markdown path."""
    RESULTS_DIR.mkdir(exist_ok=True)
    stem = RESULTS_DIR / f"{suite}-{size}"
    payload = {
        "suite": suite,
        "size": size,
        "environment": environment(),
        "results": [
            {
                "task": r.task, "tool": r.tool, "status": r.status, "times_s": r.times,
                "median_s": r.median, "ratio_to_ours": ratio(r, next((o for o in results if o.task == r.task and o.tool == OURS), None)),
                "note": r.note, **r.extra,
            }
            for r in results
        ],
    }
    stem.with_suffix(".json").write_text(json.dumps(payload, indent=2, default=str) + "\n")
    text = "\n\n".join(
        part for part in [
            f"## {suite} ({size})",
            preamble,
            "Cells: tool time / vcfzarr-sql time (above 1: vcfzarr-sql is faster), median wall time in brackets.",
            ratio_table(results),
            extra_tables,
            notes(results),
        ] if part
    )
    path = stem.with_suffix(".md")
    path.write_text(text + "\n")
    print(text)
    return path


def plot(suite: str, size: str, results: Sequence[Measurement]) -> Path | None:
    """Grouped bars of tool time / our time per task (log scale); None when we have no times."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tasks = list(dict.fromkeys(r.task for r in results))
    tools = [t for t in dict.fromkeys(r.tool for r in results) if t != OURS]
    by_key = {(r.task, r.tool): r for r in results}
    values = {
        tool: [ratio(by_key[t, tool], by_key.get((t, OURS))) if (t, tool) in by_key else None for t in tasks]
        for tool in tools
    }
    values = {tool: vs for tool, vs in values.items() if any(v is not None for v in vs)}
    tools = list(values)
    if not tools:
        return None
    IMG_DIR.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(max(6, 1.4 * len(tasks) + 2), 4.5))
    width = 0.8 / max(len(tools), 1)
    for i, tool in enumerate(tools):
        xs = [j + i * width for j, v in enumerate(values[tool]) if v is not None]
        ys = [v for v in values[tool] if v is not None]
        ax.bar(xs, ys, width, label=tool, color=plt.cm.tab10(i % 10))
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_yscale("log")
    ax.set_xticks([j + width * (len(tools) - 1) / 2 for j in range(len(tasks))])
    ax.set_xticklabels(tasks, rotation=20, ha="right", fontsize=8)
    ax.set_ylabel("tool time / vcfzarr-sql time (log)")
    ax.set_title(f"{suite} ({size}): above 1 = vcfzarr-sql faster")
    ax.legend(fontsize=7)
    fig.tight_layout()
    path = IMG_DIR / f"bench_{suite}_{size}.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def publish(suite: str, size: str, results: Sequence[Measurement], preamble: str = "", extra_tables: str = "") -> None:
    """Write the results (Markdown + JSON) and draw the plot of one suite run."""
    write(suite, size, results, preamble, extra_tables)
    plot(suite, size, results)


def suite_main(suite: str, run_suite: Callable[[Size, Sequence[str]], tuple[list[Measurement], str]],
               description: str, argv: list[str] | None) -> list[Measurement]:
    """The command line of a query suite: parse ``--size``/``--skip``, run, publish."""
    args = suite_arguments(description, argv)
    results, preamble = run_suite(SIZES[args.size], args.skip)
    publish(suite, args.size, results, preamble)
    return results


def load(suite: str, size: str) -> list[Measurement]:
    """The measurements of a finished run, read back from results/<suite>-<size>.json."""
    payload = json.loads((RESULTS_DIR / f"{suite}-{size}.json").read_text())
    keys = {"task", "tool", "status", "times_s", "median_s", "ratio_to_ours", "note"}
    return [
        Measurement(r["task"], r["tool"], r["status"], list(r["times_s"]), note=r["note"],
                    extra={k: v for k, v in r.items() if k not in keys})
        for r in payload["results"]
    ]


def main(argv: list[str] | None = None) -> None:
    """Redraw the plots of finished runs: ``python -m benchmarks.report --size quick``."""
    args = suite_arguments((main.__doc__ or "").splitlines()[0], argv)
    for suite in ("convert", "regions", "aggregates"):
        if (RESULTS_DIR / f"{suite}-{args.size}.json").exists():
            print(plot(suite, args.size, load(suite, args.size)))


if __name__ == "__main__":
    main()
