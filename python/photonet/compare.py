"""``photonet compare``: the default scenario (a load sweep) on every fabric,
written as a table and FCT/goodput-vs-load plots."""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Optional, Sequence

import pandas as pd

from . import _core, plots, sweep
from .api import fabric_names
from .config import ConfigError, load, read_config_text, tomllib
from .io import atomic_write_text, check_work_dir

DEFAULT_SCENARIO = Path(__file__).resolve().parent / "scenarios" / "compare.toml"


def scenario(path: str | Path | None = None) -> tuple[dict, dict, Optional[Path]]:
    """Returns (run config, compare settings, base dir) of a compare scenario."""
    p = Path(path) if path else DEFAULT_SCENARIO
    named = DEFAULT_SCENARIO.parent / f"{path}.toml"
    if path and not p.exists() and named.exists():
        p = named  # a scenario shipped with photonet, by name (e.g. "collectives")
    cfg = tomllib.loads(read_config_text(p))
    settings = cfg.pop("compare", {})
    unknown = set(settings) - {"loads", "fabrics", "fct_class", "cases"}
    if unknown:
        raise ConfigError(f"{p}: [compare] has unknown key(s) {sorted(unknown)}; expected loads, fabrics, fct_class")
    return cfg, settings, p.resolve().parent


def compare(
    out: str | Path = "results/compare",
    *,
    scenario_path: str | Path | None = None,
    loads: Optional[Sequence[float]] = None,
    fabrics: Optional[Sequence[str]] = None,
    overrides: Sequence[str] = (),
    jobs: int = 2,
    force: bool = False,
    on_point: Optional[Callable[[int, int], None]] = None,
) -> pd.DataFrame:
    """Runs the scenario on each fabric at each load; returns the table."""
    out = Path(out)
    check_work_dir(out, "compare output folder")
    cfg, settings, base = scenario(scenario_path)
    cfg, _ = load(cfg, list(overrides))
    loads = list(loads or settings.get("loads", [0.2, 0.5, 0.8]))
    fab = fabrics or settings.get("fabrics", "all")
    known = fabric_names()
    fab = known if fab == "all" else list(fab)
    for f in fab:
        if f not in known:
            raise ConfigError(f"fabric {f!r} is not known; expected one of {', '.join(known)}")
    if "cases" in settings:
        from .compare_collectives import run_cases

        return run_cases(out, cfg, settings, base, fab, jobs=jobs, force=force, on_point=on_point)
    for x in loads:
        if not (isinstance(x, (int, float)) and x > 0):
            raise ConfigError(f"compare load {x!r}: a load must be a number > 0")
    points = sweep.expand(cfg, {"fabric": fab, "workload.load": loads}, base_dir=base)
    if force:
        import shutil

        for p in points:
            shutil.rmtree(sweep.point_dir(out, p), ignore_errors=True)
    done = [0]
    total = len(points)
    already = sum(sweep.is_done(out, p) for p in points)
    done[0] = already
    if on_point:
        on_point(done[0], total)

    def tick(_p):
        done[0] += 1
        if on_point:
            on_point(done[0], total)

    failures = sweep.run_local(out, points, jobs=jobs, on_done=tick)
    if failures:
        raise RuntimeError(f"{len(failures)} compare point(s) failed (finished ones are kept; rerun to retry): "
                           + "; ".join(map(str, failures)))
    table = sweep.collect(out, points).rename(columns={"workload.load": "load"})
    order = {f: i for i, f in enumerate(fab)}
    table = table.assign(_o=table["fabric"].map(order)).sort_values(["_o", "load"]).drop(columns=["_o"])
    write_outputs(out, table, settings.get("fct_class", "<10KB"))
    return table


# The families of the registry, in the order plots and docs show them.
FAMILIES = ("electrical", "Sirius", "NegotiaToR", "circuit", "HPC / Baldur", "ideal")


def annotate(table: pd.DataFrame) -> pd.DataFrame:
    """Adds ``short`` and ``family`` (from the registry), ``unfinished_frac``
    and ``flagged`` (more than 5 % of the point's flows unfinished)."""
    from .api import fabrics

    info = {f.name: f for f in fabrics()}
    t = table.copy()
    t["short"] = t["fabric"].map(lambda n: info[n].short if n in info else n)
    t["family"] = t["fabric"].map(lambda n: info[n].family if n in info else "other")
    flows = pd.to_numeric(t["flows"], errors="coerce")
    t["unfinished_frac"] = (flows - pd.to_numeric(t["completed"], errors="coerce")) / flows
    t["flagged"] = t["unfinished_frac"] > plots.UNFINISHED_FLAG
    return t


def headline(fct_class: str) -> str:
    """The column of the headline FCT statistic: the censored p99 (unfinished
    flows counted at their elapsed time); the completed-only p99 stays in the CSV."""
    return f"fct{fct_class}_censored_p99_us"


def write_outputs(out: Path, table: pd.DataFrame, fct_class: str) -> None:
    table = annotate(table)
    atomic_write_text(out / "table.csv", table.to_csv(index=False))
    col = headline(fct_class)
    cols = ["fabric_name", "load", "load_basis", "offered_load", "goodput_steady", "goodput", col, f"fct{fct_class}_p99_us",
            f"fct{fct_class}_unfinished", "completed", "flows", "flagged"]
    cols = [c for c in cols if c in table]
    atomic_write_text(out / "table.md", table[cols].to_markdown(index=False) if _has_tabulate() else table[cols].to_string(index=False))
    note = "hollow markers: more than 5 % of the point's flows unfinished"
    if col in table:
        plots.facets(table, "load", col, out / "fct_vs_load.png", hue="short", facet="family", xlabel="load (%)",
                     ylabel=f"p99 FCT, flows {fct_class} (µs)", logy=True, percent_x=True, flag="flagged",
                     title=f"99th-percentile FCT of flows {fct_class}, censored (unfinished flows at their elapsed time)", note=note,
                     order=FAMILIES, reference="ideal")
    gp = "goodput_steady" if "goodput_steady" in table else "goodput"
    plots.facets(table, "load", gp, out / "goodput_vs_load.png", hue="short", facet="family", xlabel="load (%)",
                 ylabel="goodput / (N·R)", percent_x=True, flag="flagged",
                 title="Goodput, steady state (warm-up and cool-down excluded)" if gp == "goodput_steady" else "Goodput", note=note,
                 order=FAMILIES, reference="ideal")
    atomic_write_text(out / "report.html", report_html(out, table, fct_class))


def report_html(out: Path, table: pd.DataFrame, fct_class: str) -> str:
    """compare's ``report.html``: the table (flagged points highlighted) and the two figures, embedded."""
    from . import html

    col = headline(fct_class)

    def f(v, fmt):
        return "–" if v is None or v != v else format(v, fmt)

    rows, flagged = [], []
    for _, r in table.iterrows():
        rows.append([r["fabric_name"], r["family"], f(r["load"], ".2f"), f(r.get("offered_load"), ".3f"),
                     f(r.get("goodput_steady"), ".3f"), f(r.get(col), ",.1f"), f(r.get(f"fct{fct_class}_p99_us"), ",.1f"),
                     f(100 * r["unfinished_frac"], ".1f") + ("  ⚑" if r["flagged"] else "")])
        flagged.append(bool(r["flagged"]))
    head = ["fabric", "family", "load", "offered", "goodput (steady)", f"p99 µs {fct_class} (censored)",
            f"p99 µs {fct_class} (completed only)", "unfinished %"]
    flows = sorted({int(x) for x in table["flows"].dropna()})
    body = [f"<h1>photonet compare</h1><p>{', '.join(f'{n:,}' for n in flows)} flows per point. The headline FCT is the "
            f"censored p99 of flows {html._inline(fct_class)}: flows unfinished when the run stopped count at their elapsed time "
            "(a lower bound); the completed-only p99 is beside it and in <code>table.csv</code>. Highlighted rows (⚑): more than "
            "5 % of the point's flows unfinished, drawn hollow in the plots. Goodput excludes warm-up and cool-down.</p>",
            "<h2>FCT and goodput against load</h2>"]
    for name in ("fct_vs_load.png", "goodput_vs_load.png"):
        uri = html.image_uri(out / name)
        if uri:
            body.append(f'<img alt="{name}" src="{uri}">')
    body += ["<h2>Table</h2>", html.table(head, rows, flagged)]
    return html.page("photonet compare", "\n".join(body))


def _has_tabulate() -> bool:
    try:
        import tabulate  # noqa: F401

        return True
    except ImportError:
        return False
