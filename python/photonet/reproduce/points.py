"""The sweep points of a reproduction: building them from the figure files,
keying them, and running the missing ones (local threads, Ray or Slurm: a
:func:`photonet.sweep.backend`).

A point is: the figure's config + the scale's overrides + the figure's
overrides for that scale + the series' ``set`` + the x value + ``--set``
overrides. It is stored as ``<out>/points/<key>/`` exactly like ``photonet
sweep``, keyed by the hash of its complete config without ``name``, so a point
shared by several figures runs once and a killed reproduction resumes.
"""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

import tomli_w

from .. import sweep
from ..config import ConfigError, _deepcopy, apply_overrides, to_toml, tomllib
from .experiment import SCALES, Figure, Metric, Paper, Reference, claim_reads, fmt_x, is_num, x_equal

ProgressFn = Callable[[str], None]
BACKENDS = sweep.BACKENDS


@dataclass
class FigPoint:
    """One (figure, series, x) of a reproduction and the sweep point behind it."""

    figure: str
    series: str
    fabric: str
    x: Any
    key: Optional[str] = None
    status: str = "pending"       # done | cached | pending | skipped: ... | failed: ...
    reference: Optional[Reference] = None  # the figure's reference
    point: Optional[sweep.Point] = field(default=None, repr=False)


def _key_toml(complete_toml: str) -> str:
    cfg = tomllib.loads(complete_toml)
    cfg.pop("name", None)
    return tomli_w.dumps(cfg)


def point_key(complete_toml: str, inputs: Optional[dict] = None) -> str:
    """A point's results key: the config hash of its complete config without
    the run's ``name``, so the same run in two figures has one key, and of the
    contents of the files it reads (``inputs``, see :class:`photonet.sweep.Point`).
    (The core's complete config holds the common keys and the selected
    fabric's table only, so another fabric's table or a newly registered
    fabric changes no key.)"""
    return sweep.point_key(_key_toml(complete_toml), inputs or {})


def select_figures(paper: Paper, only: Optional[Sequence[str]]) -> list[Figure]:
    """The figures named in ``only`` (``fig09``, ``fig9`` or ``9`` for a file
    ``fig09_*.toml``; any other id as is), in file order."""
    if not only:
        return list(paper.figures)
    by_id = {f.id: f for f in paper.figures}
    chosen = set()
    for name in only:
        n = name.strip()
        cand = n
        digits = n[3:] if n.lower().startswith("fig") else n
        if n not in by_id and digits.isdigit():
            cand = f"fig{int(digits):02d}"
        if cand not in by_id:
            raise ConfigError(f"--only: figure {n!r} is not in {paper.name}; expected one of {', '.join(by_id)}")
        chosen.add(cand)
    return [f for f in paper.figures if f.id in chosen]


# The per-flow file a reproduction point keeps when it needs one (see
# `needs_flows`); the others keep summary.json and what the report reads.
FLOWS_FORMAT = "parquet"


def needs_flows(fig: Figure, x: Any, metrics: dict[str, Metric], metric_remap: Optional[dict] = None) -> bool:
    """Whether the points of ``fig`` at ``x`` must keep their per-flow records:
    the figure asks (``flows = true``), compares with a ``reference`` (every
    point: its per-flow metrics), draws a ``cdf`` or ``scatter`` panel at
    ``x``, or reads a metric computed from flows (``share_within``, a
    reference statistic) in a panel or a claim (``metric_remap``: a reading
    alternative's claim metrics)."""
    if fig.flows or fig.reference is not None:
        return True
    if any(pn["kind"] in ("cdf", "scatter") and x_equal(pn.get("at", fig.xs[0]), x) for pn in fig.panels):
        return True
    remap = metric_remap or {}
    used = {pn["metric"] for pn in fig.panels if "metric" in pn}
    used |= {remap.get(c["metric"], c["metric"]) for c in fig.claims if "metric" in c}
    return any(m in metrics and (metrics[m].within_us is not None or metrics[m].source == "reference") for m in used)


def build_points(
    paper: Paper,
    scale: str,
    *,
    only: Optional[Sequence[str]] = None,
    fabrics: Optional[Sequence[str]] = None,
    overrides: Sequence[str] = (),
    available: Optional[Sequence[str]] = None,
    flows: bool = False,
    metric_remap: Optional[dict] = None,
    claims_only: bool = False,
) -> tuple[list[Figure], list[FigPoint]]:
    """Every (figure, series, x) of the selected figures, validated. Returns
    (the selected figures, model figures too, in file order; the points of the
    simulated ones). Points of a fabric this photonet does not have (or not in
    ``fabrics``) are skipped. A point keeps its per-flow records where
    :func:`needs_flows` says (for any figure sharing it), or everywhere with
    ``flows``. ``claims_only``: only the points the figures' claims read
    (:func:`~photonet.reproduce.experiment.claim_reads`), for a reading
    alternative, which draws nothing."""
    if scale not in SCALES:
        raise ConfigError(f"scale {scale!r} is not known; expected one of {', '.join(SCALES)}")
    if available is None:
        from ..api import fabric_names

        available = fabric_names()
    # A figure that does not run at this scale is left out (`scales`).
    figs = [f for f in select_figures(paper, only) if scale in f.scales]
    if fabrics is not None:
        every = {s.fabric for f in paper.figures for s in f.series} | set(available)
        for f in fabrics:
            if f not in every:
                raise ConfigError(f"--fabrics: {f!r} is not used by {paper.name} nor built; expected some of {', '.join(sorted(every))}")
    out: list[FigPoint] = []
    # Points whose configs are the same (a figure drawing another's runs):
    # prepared (checked and built) once, run once.
    made: dict[tuple[str, Path], sweep.Point] = {}
    for fig in figs:
        if fig.is_model:
            continue
        if claims_only:
            reads = [pt for c in fig.claims for pt in claim_reads(c, fig.xs)]
        for s in fig.series:
            for x, xset in zip(fig.xs, fig.x_sets):
                if claims_only and (s.label, x) not in reads:
                    continue
                fp = FigPoint(fig.id, s.label, s.fabric, x, reference=fig.reference)
                out.append(fp)
                if fabrics is not None and s.fabric not in fabrics:
                    fp.status = f"skipped: fabric {s.fabric} not selected (--fabrics)"
                    continue
                if s.fabric not in available:
                    fp.status = f"skipped: fabric {s.fabric} not built"
                    continue
                cfg = _deepcopy(fig.base)
                try:
                    apply_overrides(cfg, paper.reading["set"])
                    apply_overrides(cfg, paper.scales[scale]["set"])
                    apply_overrides(cfg, fig.scale_set[scale])
                    apply_overrides(cfg, s.set)
                    apply_overrides(cfg, xset)
                    apply_overrides(cfg, list(overrides))
                    cfg["fabric"] = s.fabric
                    params = {"paper": paper.name, "figure": fig.id, "series": s.label, "x": x}
                    same = (to_toml(cfg), fig.path.parent)
                    if same in made:
                        fp.point = dataclasses.replace(made[same], params=params, prepared=None)
                    else:
                        fp.point = made[same] = sweep.prepared_point(params, cfg, fig.path.parent, key_of=_key_toml)
                except ConfigError as e:
                    raise ConfigError(f"{fig.path.name}: series {s.label!r} at x = {fmt_x(x)}: {e}") from None
                fp.key = fp.point.key
    by_id = {f.id: f for f in figs}
    keep = {fp.key for fp in out if fp.key and (flows or needs_flows(by_id[fp.figure], fp.x, paper.metrics, metric_remap))}
    for fp in out:
        if fp.point is not None:
            fp.point.flows = FLOWS_FORMAT if fp.key in keep else None
    sweep.release_shared([fp.point for fp in out if fp.point is not None])
    return figs, out


# --------------------------------------------------------------------------- running

def describe(fp: FigPoint, figs: list[Figure]) -> str:
    """``fig03 baseline load=50%``: a point in progress lines and failure lists."""
    fig = next(f for f in figs if f.id == fp.figure)
    name, _, unit = fig.xlabel.partition(" (")
    unit = unit.rstrip(")")
    if fig.x_percent and is_num(fp.x):
        xl = f"{fp.x * 100:g}%"
    else:
        xl = fmt_x(fp.x) + (f" {unit}" if unit and len(unit) <= 6 else "")
    return f"{fp.figure} {fp.series} {name}={xl}"


def summary_of(out: Path, key: str) -> dict:
    return json.loads((out / "points" / key / "summary.json").read_text())


def manifest_of(out: Path, key: str) -> dict:
    p = out / "points" / key / "manifest.json"
    return json.loads(p.read_text()) if p.exists() else {}


def run_points(
    out: Path,
    figs: list[Figure],
    fps: list[FigPoint],
    *,
    runner=None,
    progress: Optional[ProgressFn] = None,
    short: Optional[Callable[[dict], str]] = None,
) -> dict:
    """Runs the pending points (each key once) with ``runner`` (a
    :func:`photonet.sweep.backend`; default: two local threads) and sets
    every FigPoint's status. ``short(summary)`` describes a finished point in
    its progress line. Returns counts by outcome and, for Slurm, the script
    written."""
    runner = runner or sweep.backend("local", jobs=2)
    say = progress or (lambda line: None)
    brief = short or (lambda s: "")
    unique: dict[str, FigPoint] = {}
    owners: dict[str, list[FigPoint]] = {}
    for fp in fps:
        if fp.key:
            unique.setdefault(fp.key, fp)
            owners.setdefault(fp.key, []).append(fp)
    total = len(unique) + sum(1 for fp in fps if not fp.key)
    n = [0]
    status: dict[str, str] = {}
    info: dict = {"ran": 0, "cached": 0, "skipped": 0, "failed": 0, "pending": 0, "script": None}

    def line(fp: FigPoint, text: str) -> None:
        n[0] += 1
        shared = sorted({o.figure for o in owners.get(fp.key, [])} - {fp.figure}) if fp.key else []
        also = f" (also {', '.join(shared)})" if shared else ""
        say(f"[{n[0]:>{len(str(total))}}/{total}] {describe(fp, figs)}{also}: {text}")

    def with_brief(head: str, summary: dict) -> str:
        b = brief(summary)
        return f"{head} ({b})" if b else head

    for fp in fps:
        if not fp.key:
            info["skipped"] += 1
            line(fp, fp.status)
    todo = []
    for key, fp in unique.items():
        if sweep.is_done(out, fp.point):
            fp.point.prepared = None  # not run: its fabric is freed
            status[key] = "cached"
            info["cached"] += 1
            line(fp, "cached (" + brief(summary_of(out, key)) + ")")
        else:
            todo.append(fp)

    by_key = {fp.key: fp for fp in todo}

    def on_done(p: sweep.Point, secs: Optional[float], summary: Optional[dict]) -> None:
        fp = by_key[p.key]
        status[fp.key] = "done"
        info["ran"] += 1
        line(fp, "done (ray)" if secs is None else with_brief(f"done in {secs:.1f} s", summary))

    def on_failed(f: sweep.Failure) -> None:
        fp = by_key[f.point.key]
        status[fp.key] = f"failed: {f.error}"
        info["failed"] += 1
        line(fp, status[fp.key])

    outcome = runner.run(out, [fp.point for fp in todo], on_done=on_done, on_failed=on_failed) if todo else sweep.Outcome()
    info["script"] = outcome.script
    for fp in todo:
        if fp.key not in status:
            status[fp.key] = "pending"
            info["pending"] += 1
            line(fp, "pending (Slurm job array)")
    for fp in fps:
        if fp.key:
            fp.status = status.get(fp.key, "pending")
    return info
