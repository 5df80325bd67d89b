"""``photonet reproduce <paper>``: runs the figure files of ``experiments/<paper>/``
as resumable sweep points, evaluates its analytical models, draws each figure,
and writes ``report.md`` and ``numbers.csv``, which put our numbers next to the
ones the paper publishes.

This package knows no paper: everything paper-specific is in the experiment
directory (see ``experiment.py`` for the schema):

* ``experiment.toml``: the scales (``[scales.quick]``, ``[scales.full]``: overrides
  of every point), the metrics panels and claims may name (``[metrics.<name>]``),
  and the report's prose and setup keys (``[report]``);
* one TOML file per figure: an ordinary photonet config plus a ``[reproduce]``
  table (x axis, series, panels, claims), or a model's parameters plus a
  ``[reproduce]`` table naming the model (``model = "..."``), its panels and
  claims that pick numbers out of the model's report by path.

Points are stored as ``<out>/points/<key>/`` exactly like ``photonet sweep``,
so a killed reproduction resumes where it stopped. Points whose fabric (or
figures whose model) is not built into this photonet are reported as skipped;
they run once it is.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

import pandas as pd

from .. import sweep
from ..config import ConfigError
from ..io import atomic_write_json, atomic_write_text, check_work_dir
from .experiment import SCALES, Figure, Metric, Paper, Series, experiments_root, load_paper, papers, parse_metric
from .models import ModelRun, evaluate_models, lookup, model_names
from .numbers import NUMBERS_COLUMNS, claim_reads, evaluate_claim, metric_value, metrics_of, numbers, short, table
from .panels import draw
from .points import BACKENDS, FigPoint, ProgressFn, build_points, point_key, run_points, select_figures
from .report import fmt, paper_value, write_report

__all__ = [
    "reproduce", "Reproduction", "run_cli", "load_paper", "papers", "experiments_root", "build_points", "run_points",
    "select_figures", "point_key", "table", "numbers", "evaluate_claim", "metrics_of", "metric_value", "draw",
    "claim_reads", "evaluate_models", "lookup", "model_names", "write_report", "parse_metric", "SCALES", "BACKENDS",
    "NUMBERS_COLUMNS", "Paper", "Figure", "Series", "Metric", "FigPoint", "ModelRun", "ConfigError",
]


@dataclass
class Reproduction:
    out: Path
    scale: str
    table: pd.DataFrame
    numbers: pd.DataFrame
    figures: list[Path]
    report: Path
    info: dict


def reproduce(
    paper: str,
    out: str | Path | None = None,
    *,
    full: bool = False,
    only: Optional[Sequence[str]] = None,
    fabrics: Optional[Sequence[str]] = None,
    overrides: Sequence[str] = (),
    flows: bool = False,
    jobs: int = 2,
    backend: str = "local",
    ray_address: Optional[str] = None,
    partition: Optional[str] = None,
    time_limit: str = "01:00:00",
    points_per_task: Optional[int] = None,
    progress: Optional[ProgressFn] = None,
    root: Optional[Path] = None,
    available: Optional[Sequence[str]] = None,
    available_models: Optional[Sequence[str]] = None,
) -> Reproduction:
    """Runs (resumably) and reports one paper's figures; see the package doc.

    ``only``: figure ids (``fig09`` / ``9``); ``fabrics``: run only these fabrics
    (the rest are reported as skipped); ``overrides``: ``key=value`` applied to
    every point after the scale; ``flows``: every point keeps its per-flow
    records (``points/<key>/flows.parquet``; by default only the points a
    figure reads them from do); ``available`` / ``available_models``: the
    fabrics / models treated as built (default: this photonet's). Raises
    ConfigError for bad input, before running anything.
    """
    t0 = time.time()
    p = load_paper(paper, root)
    scale = "full" if full else "quick"
    out = Path(out) if out else Path("results") / "reproduce" / paper
    figs, fps = build_points(p, scale, only=only, fabrics=fabrics, overrides=overrides, available=available, flows=flows)
    check_work_dir(out, "reproduce output folder")
    runs = evaluate_models(figs, available=available_models)
    runner = sweep.backend(backend, jobs=max(1, jobs), ray_address=ray_address, partition=partition,
                           time_limit=time_limit, points_per_task=points_per_task)
    info = run_points(out, figs, fps, runner=runner, progress=progress, short=short(p.metrics))
    df = table(out, fps, p.metrics)
    nums = numbers(figs, df, scale, p.scales[scale]["about"], metrics=p.metrics, models=runs)
    sens = sensitivity(p, out, scale, nums, only=only, fabrics=fabrics, overrides=overrides, available=available, flows=flows,
                       run=lambda f, pts, name: run_points(
                           out, f, pts, runner=runner,
                           progress=(lambda line: progress(f"(sensitivity: {name}) {line}")) if progress else None,
                           short=short(p.metrics)))
    main_keys = {fp.key for fp in fps if fp.key}
    info["sensitivity_points"] = len(set(sens.attrs.get("keys", ())) - main_keys) if sens is not None else 0
    if sens is not None:
        atomic_write_text(out / "sensitivity.csv", sens.to_csv(index=False))
    for r in runs.values():
        if r.report is not None:
            atomic_write_json(out / f"{r.figure}.json", r.report)
    pngs = [draw(f, df, out / f"{f.id}.png", scale, metrics=p.metrics, out=out, model=runs.get(f.id)) for f in figs]
    atomic_write_text(out / "points.csv", df.to_csv(index=False))
    atomic_write_text(out / "numbers.csv", nums[NUMBERS_COLUMNS].to_csv(index=False))
    report = write_report(out, p, figs, df, nums, scale=scale, overrides=overrides, info=info, wall_s=time.time() - t0,
                          models=runs, sensitivity=sens)
    return Reproduction(out, scale, df, nums, pngs, report, info)


def sensitivity(p: Paper, out: Path, scale: str, nums, *, only, fabrics, overrides, available, run, flows=False):
    """The claims of the simulated figures under each of the reading's
    ``alternatives`` (their points run like any other, cached by config; only
    the points the claims read, as nothing draws them):
    one row per claim, columns ``figure``, ``quantity``, ``paper``, ``this
    reading`` and one per alternative. None without alternatives."""
    import dataclasses

    from .points import select_figures

    alts = p.reading.get("alternatives", [])
    if not alts:
        return None
    sims = nums[nums["file"].isin([f.id for f in p.figures if not f.is_model])]
    res = pd.DataFrame({"figure": sims["figure"], "quantity": sims["quantity"],
                        "paper": [r["paper"] if r["paper"] == r["paper"] else r["paper_text"] for _, r in sims.iterrows()],
                        "this reading": sims["ours"], "file": sims["file"]})
    keys: set = set()
    for a in alts:
        pa = dataclasses.replace(p, reading={**p.reading, "set": {**p.reading["set"], **a["set"]}})
        if only and a["only"]:
            wanted = {f.id for f in select_figures(p, only)}
            sel = [f.id for f in select_figures(p, a["only"]) if f.id in wanted]
            if not sel:
                res[a["name"]] = float("nan")
                continue
        else:
            sel = a["only"] or only
        figs_a, fps_a = build_points(pa, scale, only=sel, fabrics=fabrics, overrides=overrides, available=available,
                                     flows=flows, metric_remap=a["metrics"], claims_only=True)
        figs_a = [f for f in figs_a if not f.is_model]
        run(figs_a, fps_a, a["name"])
        keys.update(fp.key for fp in fps_a if fp.key and fp.status == "done")
        remap = a["metrics"]
        figs_a = [dataclasses.replace(f, claims=[{**c, "metric": remap.get(c.get("metric"), c.get("metric"))}
                                                 for c in f.claims]) for f in figs_a]
        df_a = table(out, fps_a, p.metrics)
        n_a = numbers(figs_a, df_a, scale, p.scales[scale]["about"], metrics=p.metrics)
        vals = {(r["file"], r["quantity"]): r["ours"] for _, r in n_a.iterrows()}
        res[a["name"]] = [vals.get((f, q), float("nan")) for f, q in zip(res["file"], res["quantity"])]
    res = res.drop(columns=["file"])
    res.attrs["keys"] = sorted(keys)  # the points the alternatives ran or reused
    return res


def run_cli(a, console, out_console, backend: Optional[dict] = None) -> int:
    """``photonet reproduce``: the CLI handler (``a`` from argparse; ``backend``
    the keyword arguments of the backend options)."""
    from rich.table import Table

    names = papers() if a.paper == "all" else [a.paper]
    if not names:
        raise ConfigError(f"no experiments found in {experiments_root()}")
    only = [x for x in a.only.split(",") if x.strip()] if a.only is not None else None
    fabrics = [x.strip() for x in a.fabrics.split(",") if x.strip()] if a.fabrics is not None else None
    for flag, given, chosen in (("--only", a.only, only), ("--fabrics", a.fabrics, fabrics)):
        if chosen is not None and not chosen:
            raise ConfigError(f"{flag} {given!r}: nothing given; expected comma-separated names")
    backend = backend or {}

    def out_of(name: str) -> Path:
        if a.out:
            return Path(a.out) / name if a.paper == "all" else Path(a.out)
        return Path("results") / "reproduce" / name

    for name in names:
        load_paper(name)  # an unknown paper or a bad output folder is an error before anything runs
        check_work_dir(out_of(name), "--out")
    code = 0
    for name in names:
        out = out_of(name)
        console.print(f"[bold]reproduce {name}[/] ({'full' if a.full else 'quick'} scale) -> {out}/")
        r = reproduce(name, out, full=a.full, only=only, fabrics=fabrics, overrides=list(a.set or []),
                      flows=getattr(a, "flows", False), **backend,
                      progress=lambda line: console.print(line, markup=False, highlight=False, soft_wrap=True))
        t = Table(title=f"{name}: ours vs the paper ({r.scale} scale)")
        for c in ("figure", "quantity", "ours", "paper", "ours/paper", "note"):
            t.add_column(c, justify="right" if c in ("ours", "paper", "ours/paper") else "left", overflow="fold")
        for _, row in r.numbers.iterrows():
            t.add_row(row["figure"], row["quantity"], fmt(row["ours"], 4), paper_value(row), fmt(row["ratio"]), row["note"])
        out_console.print(t)
        i = r.info
        console.print(f"{i['ran']} run, {i['cached']} cached, {i['skipped']} skipped, {i['failed']} failed, {i['pending']} pending; "
                      f"wrote {out}/report.md, report.html, numbers.csv, points.csv, " + ", ".join(p.name for p in r.figures))
        if i["script"]:
            console.print(f"submit the pending points with `sbatch {i['script']}`, then rerun this command to draw and report them")
        if i["failed"]:
            code = 1
    return code

