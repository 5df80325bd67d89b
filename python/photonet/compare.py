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
    points = sweep.expand(cfg, {"fabric": fab, "workload.load": loads})
    for p in points:
        p.base_dir = str(base) if base else None
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


def write_outputs(out: Path, table: pd.DataFrame, fct_class: str) -> None:
    atomic_write_text(out / "table.csv", table.to_csv(index=False))
    col = f"fct{fct_class}_p99_us"
    cols = ["fabric_name", "load", "load_basis", "offered_load", "goodput_steady", "goodput", col, f"fct{fct_class}_unfinished",
            f"fct{fct_class}_censored_p99_us", "completed", "flows"]
    cols = [c for c in cols if c in table]
    atomic_write_text(out / "table.md", table[cols].to_markdown(index=False) if _has_tabulate() else table[cols].to_string(index=False))
    if col in table:
        plots.lines(table, "load", col, out / "fct_vs_load.png", hue="fabric_name", xlabel="load (%)", ylabel=f"p99 FCT of flows {fct_class} (µs)",
                    title="99th-percentile FCT of short flows", logy=True, percent_x=True)
    gp = "goodput_steady" if "goodput_steady" in table else "goodput"
    plots.lines(table, "load", gp, out / "goodput_vs_load.png", hue="fabric_name", xlabel="load (%)",
                ylabel="goodput / (N·R), steady state" if gp == "goodput_steady" else "goodput / (N·R)",
                title="Goodput (warm-up and cool-down excluded)", percent_x=True)


def _has_tabulate() -> bool:
    try:
        import tabulate  # noqa: F401

        return True
    except ImportError:
        return False
