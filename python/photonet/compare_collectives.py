"""``photonet compare --scenario collectives``: every case of a scenario's
``[compare.cases]`` (name → ``workload.pattern.jobs``) on every fabric; a table
of per-job completion time, bus bandwidth and slowdown against the ideal flat
network, and a plot of the slowdowns."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Callable, Optional, Sequence

import pandas as pd

from . import sweep
from .io import atomic_write_text

JOBS = "workload.pattern.jobs"


def run_cases(out: Path, cfg: dict, settings: dict, base: Optional[Path], fab: Sequence[str], *, jobs: int,
              force: bool, on_point: Optional[Callable[[int, int], None]]) -> pd.DataFrame:
    """Runs every (fabric, case) point and returns one row per (fabric, case, job)."""
    cases: dict = settings["cases"]
    names = list(cases)
    points = sweep.expand(cfg, {"fabric": list(fab), JOBS: [cases[n] for n in names]})
    for p in points:
        p.base_dir = str(base) if base else None
    if force:
        import shutil

        for p in points:
            shutil.rmtree(sweep.point_dir(out, p), ignore_errors=True)
    done = [sum(sweep.is_done(out, p) for p in points)]
    if on_point:
        on_point(done[0], len(points))

    def tick(_p):
        done[0] += 1
        if on_point:
            on_point(done[0], len(points))

    failures = sweep.run_local(out, points, jobs=jobs, on_done=tick)
    if failures:
        raise RuntimeError(f"{len(failures)} compare point(s) failed (finished ones are kept; rerun to retry): "
                           + "; ".join(map(str, failures)))
    rows = []
    for p in points:
        s = json.loads((sweep.point_dir(out, p) / "summary.json").read_text())
        case = names[[cases[n] for n in names].index(p.params[JOBS])]
        for j in s["collectives"]["jobs"]:
            rows.append({
                "fabric": p.params["fabric"], "fabric_name": s["fabric"], "case": case, "job": j["job"],
                "collective": f"{j['collective']} ({j['algorithm']})", "n": j["participants"],
                "message_bytes": j["message_bytes"], "completion_us": j["completion_us"],
                "busbw_gbps": j["busbw_gbps"], "iteration_us": j["iteration_us"],
                "ideal_iteration_us": j["ideal_iteration_us"], "slowdown": j["slowdown"],
                "unfinished_flows": s["collectives"]["unfinished_flows"],
            })
    table = pd.DataFrame(rows)
    write_outputs(out, table, names, list(fab))
    return table


def write_outputs(out: Path, table: pd.DataFrame, cases: list[str], fab: list[str]) -> None:
    atomic_write_text(out / "table.csv", table.to_csv(index=False))
    atomic_write_text(out / "table.md", markdown(table))
    if len(table):
        slowdown_plot(table, cases, fab, out / "slowdown.png")


def markdown(table: pd.DataFrame) -> str:
    """Fabric × case: the slowdown of each job (mean iteration / ideal), and
    the bus bandwidth."""
    if table.empty:
        return ""
    t = table.assign(cell=[f"{s:.2f}× · {b:.1f}" for s, b in zip(table["slowdown"], table["busbw_gbps"])],
                     col=[f"{c} j{j}" if (table["case"] == c).sum() > table["fabric"].nunique() else c
                          for c, j in zip(table["case"], table["job"])])
    wide = t.pivot_table(index="fabric_name", columns="col", values="cell", aggfunc="first", sort=False)
    head = "slowdown vs ideal flat network · busbw GB/s\n\n"
    try:
        return head + wide.to_markdown()
    except ImportError:
        return head + wide.to_string()


def slowdown_plot(table: pd.DataFrame, cases: list[str], fab: list[str], path: Path) -> Path:
    from .plots import _save, plt

    t = table.assign(col=[f"{c} j{j}" for c, j in zip(table["case"], table["job"])])
    cols = list(dict.fromkeys(t["col"]))
    names = list(dict.fromkeys(t["fabric_name"]))
    fig, ax = plt.subplots(figsize=(max(6.0, 0.5 * len(names) * len(cols) / 3), 4.0))
    w = 0.8 / max(1, len(cols))
    for i, c in enumerate(cols):
        sub = t[t["col"] == c].set_index("fabric_name").reindex(names)
        ax.bar([k + i * w for k in range(len(names))], sub["slowdown"], width=w, label=c)
    ax.set_xticks([k + 0.4 - w / 2 for k in range(len(names))])
    ax.set_xticklabels(names, rotation=30, ha="right", fontsize=7)
    ax.set_yscale("log")
    ax.axhline(1.0, color="k", lw=0.6)
    ax.set_ylabel("iteration time / ideal flat network")
    ax.set_title("Collectives: slowdown against the ideal flat network", fontsize=10)
    ax.legend(fontsize=6, ncol=2)
    ax.grid(True, axis="y", alpha=0.3)
    return _save(fig, path)
