"""``photonet reproduce <paper>``: runs the figure configs of ``experiments/<paper>/``
as resumable sweep points, draws each figure, and writes ``report.md`` and
``numbers.csv``, which put our numbers next to the ones the paper publishes.

An experiment directory holds one TOML file per figure and a ``scales.toml``.
A figure file is an ordinary photonet config (at the paper's scale) plus a
``[reproduce]`` table that names the x axis, the series (one fabric each, with
optional overrides), the panels to draw and the paper's claims to check. A point
is: the figure's config + the scale's overrides + the figure's overrides for that
scale + the series' ``set`` + the x value + ``--set`` overrides. Tables that
configure other fabrics (``[sirius]`` for an ESN point, ...) are dropped, so a
point shared by several figures (e.g. ESN at load 0.5) runs once.

Points are stored as ``<out>/points/<key>/`` exactly like ``photonet sweep``,
so a killed reproduction resumes where it stopped. Points whose fabric is not
built into this photonet are reported as skipped; they run once it is.
"""
from __future__ import annotations

import datetime as _dt
import json
import math
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Optional, Sequence

import pandas as pd
import tomli_w

from . import sweep
from .config import ConfigError, _deepcopy, apply_overrides, complete, config_hash, tomllib
from .io import atomic_write_text

SCALES = ("quick", "full")

# Fabrics configured by another fabric's table (default: the table named like the fabric).
FABRIC_TABLE = {"sirius_ideal": "sirius"}

# Metrics a panel or a claim can name: (column label, unit).
METRICS = {
    "fct": ("p99 FCT of flows {cls} (µs)", "µs"),
    "goodput": ("goodput / (N·R)", ""),
    "offered_load": ("offered load / (N·R)", ""),
    "peak_queue_kb": ("peak aggregate queue per ToR (KB)", "KB"),
    "peak_reorder_kb": ("peak reorder buffer per flow (KB)", "KB"),
}
# fabric_stats keys behind the memory metrics (KB = 1000 B).
STAT_KEYS = {"peak_queue_kb": "peak_node_queue_bytes", "peak_reorder_kb": "peak_reorder_bytes"}

_REPRO_KEYS = {"title", "x", "x_key", "x_values", "x_set", "xlabel", "x_percent", "logx", "series", "panels", "claims",
               "fct_class", "notes", *SCALES}
_SERIES_KEYS = {"label", "fabric", "set"}
_PANEL_KEYS = {"metric", "title", "logy", "ylabel"}
_CLAIM_KEYS = {"what", "metric", "kind", "a", "b", "at", "a_at", "b_at", "paper", "paper_text", "expect", "quote", "unit",
               "note", "scale_sensitive"}
_CLAIM_KINDS = {"value", "ratio", "reduction"}

ProgressFn = Callable[[str], None]


# --------------------------------------------------------------------------- experiments

@dataclass
class Series:
    label: str
    fabric: str
    set: dict


@dataclass
class Figure:
    id: str
    path: Path
    title: str
    base: dict                    # the run config (without [reproduce])
    xs: list[float]               # x axis values
    x_sets: list[dict]            # overrides of each x value
    xlabel: str
    x_percent: bool
    logx: bool
    series: list[Series]
    panels: list[dict]
    claims: list[dict]
    fct_class: str
    notes: str
    scale_set: dict[str, dict]    # per-scale overrides of this figure


@dataclass
class Paper:
    name: str
    dir: Path
    scales: dict[str, dict]       # scale -> {"about": str, "set": {key: value}}
    figures: list[Figure]

    def figure_ids(self) -> list[str]:
        return [f.id for f in self.figures]


def experiments_root() -> Path:
    """``$PHOTONET_EXPERIMENTS``, else ``experiments/`` of the repository, else of the cwd."""
    env = os.environ.get("PHOTONET_EXPERIMENTS")
    if env:
        return Path(env)
    repo = Path(__file__).resolve().parents[2] / "experiments"
    for cand in (repo, Path.cwd() / "experiments"):
        if cand.is_dir():
            return cand
    return repo


def papers(root: Optional[Path] = None) -> list[str]:
    """Experiment directories that ``reproduce`` can run."""
    root = Path(root) if root else experiments_root()
    if not root.is_dir():
        return []
    return sorted(d.name for d in root.iterdir() if d.is_dir() and (d / "scales.toml").exists())


def _read_toml(p: Path) -> dict:
    try:
        return tomllib.loads(p.read_text())
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{p}: not valid TOML: {e}") from None


def _unknown(where: str, got: Iterable[str], allowed: set) -> None:
    bad = sorted(set(got) - allowed)
    if bad:
        raise ConfigError(f"{where}: unknown key(s) {', '.join(map(repr, bad))}; expected {', '.join(sorted(allowed))}")


def _is_num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def load_paper(name: str, root: Optional[Path] = None) -> Paper:
    root = Path(root) if root else experiments_root()
    d = root / name
    if not (d / "scales.toml").exists():
        known = papers(root)
        raise ConfigError(f"paper {name!r} has no experiments in {root}; expected one of {', '.join(known) or '(none)'}")
    raw_scales = _read_toml(d / "scales.toml")
    scales = {}
    for s in SCALES:
        t = raw_scales.get(s)
        if not isinstance(t, dict):
            raise ConfigError(f"{d / 'scales.toml'}: missing table [{s}]")
        _unknown(f"{d / 'scales.toml'}: [{s}]", t, {"about", "set"})
        scales[s] = {"about": str(t.get("about", s)), "set": dict(t.get("set", {}))}
    _unknown(f"{d / 'scales.toml'}", raw_scales, set(SCALES))
    figures = [_load_figure(p) for p in sorted(d.glob("*.toml")) if p.name != "scales.toml"]
    ids = [f.id for f in figures]
    dup = {i for i in ids if ids.count(i) > 1}
    if dup:
        raise ConfigError(f"{d}: two figure files share the id(s) {sorted(dup)} (the file name up to the first '_')")
    return Paper(name, d, scales, figures)


def _load_figure(path: Path) -> Figure:
    cfg = _read_toml(path)
    rep = cfg.pop("reproduce", None)
    where = f"{path}: [reproduce]"
    if not isinstance(rep, dict):
        raise ConfigError(f"{path}: no [reproduce] table (what to sweep and draw)")
    _unknown(where, rep, _REPRO_KEYS)
    xs = rep.get("x")
    if not isinstance(xs, list) or not xs or not all(_is_num(v) for v in xs):
        raise ConfigError(f"{where}: `x` must be a non-empty list of numbers (the x axis)")
    if "x_set" in rep:
        x_sets = rep["x_set"]
        if not isinstance(x_sets, list) or len(x_sets) != len(xs) or not all(isinstance(s, dict) for s in x_sets):
            raise ConfigError(f"{where}: `x_set` must be a list of {len(xs)} tables, one per value of `x`")
        if "x_key" in rep or "x_values" in rep:
            raise ConfigError(f"{where}: give either `x_set` or `x_key` (+ `x_values`), not both")
        x_sets = [dict(s) for s in x_sets]
    elif "x_key" in rep:
        vals = rep.get("x_values", xs)
        if not isinstance(vals, list) or len(vals) != len(xs):
            raise ConfigError(f"{where}: `x_values` must have one value per value of `x` ({len(xs)})")
        x_sets = [{rep["x_key"]: v} for v in vals]
    else:
        raise ConfigError(f"{where}: say what x sets, with `x_key` (+ `x_values`) or `x_set`")
    series = []
    for i, s in enumerate(rep.get("series", [])):
        if not isinstance(s, dict) or "label" not in s or "fabric" not in s:
            raise ConfigError(f"{where}: series #{i + 1} needs `label` and `fabric`")
        _unknown(f"{where} series {s['label']!r}", s, _SERIES_KEYS)
        series.append(Series(str(s["label"]), str(s["fabric"]), dict(s.get("set", {}))))
    if not series:
        raise ConfigError(f"{where}: `series` is empty")
    labels = [s.label for s in series]
    if len(set(labels)) != len(labels):
        raise ConfigError(f"{where}: series labels must be distinct")
    panels = []
    for p in rep.get("panels", []):
        _unknown(f"{where} panel", p, _PANEL_KEYS)
        if p.get("metric") not in METRICS:
            raise ConfigError(f"{where}: panel metric {p.get('metric')!r} is not known; expected one of {', '.join(METRICS)}")
        panels.append(dict(p))
    if not panels:
        raise ConfigError(f"{where}: `panels` is empty")
    claims = []
    for c in rep.get("claims", []):
        claims.append(_check_claim(where, c, labels, xs))
    scale_set = {}
    for s in SCALES:
        t = rep.get(s, {})
        _unknown(f"{where}.{s}", t, {"set"})
        scale_set[s] = dict(t.get("set", {}))
    return Figure(
        id=path.stem.split("_", 1)[0],
        path=path.resolve(),
        title=str(rep.get("title", path.stem)),
        base=cfg,
        xs=[float(v) for v in xs],
        x_sets=x_sets,
        xlabel=str(rep.get("xlabel", rep.get("x_key", "x"))),
        x_percent=bool(rep.get("x_percent", False)),
        logx=bool(rep.get("logx", False)),
        series=series,
        panels=panels,
        claims=claims,
        fct_class=str(rep.get("fct_class", "<100KB")),
        notes=str(rep.get("notes", "")),
        scale_set=scale_set,
    )


def _check_claim(where: str, c: dict, labels: list[str], xs: list) -> dict:
    what = c.get("what", "?")
    w = f"{where} claim {what!r}"
    _unknown(w, c, _CLAIM_KEYS)
    if "what" not in c:
        raise ConfigError(f"{where}: a claim needs `what`")
    if c.get("metric") not in METRICS:
        raise ConfigError(f"{w}: metric {c.get('metric')!r} is not known; expected one of {', '.join(METRICS)}")
    kind = c.get("kind", "value")
    if kind not in _CLAIM_KINDS:
        raise ConfigError(f"{w}: kind {kind!r} is not known; expected one of {', '.join(sorted(_CLAIM_KINDS))}")
    need = ["a"] if kind == "value" else ["a", "b"]
    for k in need:
        if c.get(k) not in labels:
            raise ConfigError(f"{w}: `{k}` = {c.get(k)!r} is not a series label; expected one of {labels}")
    for k in ("at", "a_at", "b_at"):
        v = c.get(k)
        if v is None or (k == "at" and v in ("max", "min")):
            continue
        if not _is_num(v) or not any(math.isclose(v, x) for x in xs):
            raise ConfigError(f"{w}: `{k}` = {v!r} is not one of the x values {xs}" + (" (or \"max\"/\"min\")" if k == "at" else ""))
    if ("a_at" in c) != ("b_at" in c) and kind != "value":
        raise ConfigError(f"{w}: give both `a_at` and `b_at` (or `at`)")
    if "expect" in c:
        _parse_expect(w, c["expect"])
    if "paper" in c and not _is_num(c["paper"]):
        raise ConfigError(f"{w}: `paper` must be a number (use `paper_text` for words)")
    return {"kind": kind, "at": "max", **c}


def _parse_expect(where: str, e: Any) -> tuple[str, float]:
    if isinstance(e, str):
        parts = e.split()
        if len(parts) == 2 and parts[0] in ("<", ">"):
            try:
                return parts[0], float(parts[1])
            except ValueError:
                pass
    raise ConfigError(f"{where}: `expect` = {e!r}: expected \"> number\" or \"< number\"")


# --------------------------------------------------------------------------- points

@dataclass
class FigPoint:
    """One (figure, series, x) of a reproduction and the sweep point behind it."""

    figure: str
    series: str
    fabric: str
    x: float
    key: Optional[str] = None
    status: str = "pending"       # done | cached | pending | skipped: ... | failed: ...
    point: Optional[sweep.Point] = field(default=None, repr=False)


def fabric_table(fabric: str) -> str:
    return FABRIC_TABLE.get(fabric, fabric)


def point_key(complete_toml: str, fabric: str, fabric_tables: Iterable[str]) -> str:
    """A point's results key: the config hash of its complete config without
    the run's ``name`` and without other fabrics' tables, so the same run in two
    figures (or before and after a new fabric adds its default table) has one key."""
    cfg = tomllib.loads(complete_toml)
    cfg.pop("name", None)
    own = fabric_table(fabric)
    for t in fabric_tables:
        if t != own:
            cfg.pop(t, None)
    return config_hash(tomli_w.dumps(cfg))


def build_points(
    paper: Paper,
    scale: str,
    *,
    only: Optional[Sequence[str]] = None,
    fabrics: Optional[Sequence[str]] = None,
    overrides: Sequence[str] = (),
    available: Optional[Sequence[str]] = None,
) -> tuple[list[Figure], list[FigPoint]]:
    """Every (figure, series, x) of the selected figures, validated. Points of a
    fabric this photonet does not have (or not in ``fabrics``) are skipped."""
    if scale not in SCALES:
        raise ConfigError(f"scale {scale!r} is not known; expected one of {', '.join(SCALES)}")
    if available is None:
        from .api import fabrics as _fabrics

        available = _fabrics()
    figs = select_figures(paper, only)
    if fabrics is not None:
        every = {s.fabric for f in paper.figures for s in f.series} | set(available)
        for f in fabrics:
            if f not in every:
                raise ConfigError(f"--fabrics: {f!r} is not used by {paper.name} nor built; expected some of {', '.join(sorted(every))}")
    tables = set(available) | {fabric_table(s.fabric) for f in paper.figures for s in f.series} | set(FABRIC_TABLE.values())
    out: list[FigPoint] = []
    for fig in figs:
        for s in fig.series:
            for x, xset in zip(fig.xs, fig.x_sets):
                fp = FigPoint(fig.id, s.label, s.fabric, x)
                out.append(fp)
                if fabrics is not None and s.fabric not in fabrics:
                    fp.status = f"skipped: fabric {s.fabric} not selected (--fabrics)"
                    continue
                if s.fabric not in available:
                    fp.status = f"skipped: fabric {s.fabric} not built"
                    continue
                cfg = _deepcopy(fig.base)
                try:
                    apply_overrides(cfg, paper.scales[scale]["set"])
                    apply_overrides(cfg, fig.scale_set[scale])
                    apply_overrides(cfg, s.set)
                    apply_overrides(cfg, xset)
                    apply_overrides(cfg, list(overrides))
                    cfg["fabric"] = s.fabric
                    own = fabric_table(s.fabric)
                    for t in tables:
                        if t != own:
                            cfg.pop(t, None)
                    text, _ = complete(cfg, base_dir=fig.path.parent)
                except ConfigError as e:
                    raise ConfigError(f"{fig.path.name}: series {s.label!r} at x = {x:g}: {e}") from None
                fp.key = point_key(text, s.fabric, tables)
                params = {"paper": paper.name, "figure": fig.id, "series": s.label, "x": x}
                fp.point = sweep.Point(params, text, str(fig.path.parent), fp.key)
    return figs, out


def select_figures(paper: Paper, only: Optional[Sequence[str]]) -> list[Figure]:
    """The figures named in ``only`` (``fig09``, ``fig9`` or ``9``), in file order."""
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


# --------------------------------------------------------------------------- running

class _Cancelled(Exception):
    pass


def _describe(fp: FigPoint, figs: list[Figure]) -> str:
    fig = next(f for f in figs if f.id == fp.figure)
    name, _, unit = fig.xlabel.partition(" (")
    unit = unit.rstrip(")")
    if fig.x_percent:
        xl = f"{fp.x * 100:g}%"
    else:
        xl = f"{fp.x:g}" + (f" {unit}" if unit and len(unit) <= 6 else "")
    return f"{fp.figure} {fp.series} {name}={xl}"


def _short(summary: dict, fct_class: str) -> str:
    m = metrics_of(summary, fct_class)
    parts = [f"p99 FCT{fct_class} {m['fct']:.4g} µs", f"goodput {m['goodput']:.3f}"]
    return ", ".join(parts)


def run_points(
    out: Path,
    figs: list[Figure],
    fps: list[FigPoint],
    *,
    jobs: int = 2,
    backend: str = "local",
    ray_address: Optional[str] = None,
    partition: Optional[str] = None,
    time_limit: str = "01:00:00",
    progress: Optional[ProgressFn] = None,
) -> dict:
    """Runs the pending points (each key once) and sets every FigPoint's status.
    Returns counts by outcome and, for Slurm, the script written."""
    if backend not in ("local", "ray", "slurm"):
        raise ConfigError(f"backend {backend!r} is not known; expected local, ray or slurm")
    say = progress or (lambda line: None)
    unique: dict[str, FigPoint] = {}
    for fp in fps:
        if fp.key and fp.key not in unique:
            unique[fp.key] = fp
    owners: dict[str, list[FigPoint]] = {}
    for fp in fps:
        if fp.key:
            owners.setdefault(fp.key, []).append(fp)
    fct_class = {f.id: f.fct_class for f in figs}
    total = len(unique) + sum(1 for fp in fps if not fp.key)
    n = [0]
    status: dict[str, str] = {}
    info: dict = {"ran": 0, "cached": 0, "skipped": 0, "failed": 0, "pending": 0, "script": None}

    def line(fp: FigPoint, text: str) -> None:
        n[0] += 1
        shared = sorted({o.figure for o in owners.get(fp.key, [])} - {fp.figure}) if fp.key else []
        also = f" (also {', '.join(shared)})" if shared else ""
        say(f"[{n[0]:>{len(str(total))}}/{total}] {_describe(fp, figs)}{also}: {text}")

    for fp in fps:
        if not fp.key:
            info["skipped"] += 1
            line(fp, fp.status)
    todo = []
    for key, fp in unique.items():
        if sweep.is_done(out, fp.point):
            status[key] = "cached"
            info["cached"] += 1
            line(fp, "cached (" + _short(_summary(out, key), fct_class[fp.figure]) + ")")
        else:
            todo.append(fp)

    if backend == "local":
        cancel = threading.Event()

        def cb(*_):
            if cancel.is_set():
                raise _Cancelled()
            return True

        def one(fp: FigPoint):
            t0 = time.time()
            try:
                s = sweep.run_point(out, fp.point, progress=cb)
                return fp, "done", time.time() - t0, s
            except _Cancelled:
                return fp, "cancelled", time.time() - t0, None
            except Exception as e:  # noqa: BLE001 - one bad point must not lose the others
                return fp, f"failed: {type(e).__name__}: {e}", time.time() - t0, None
            except BaseException as e:  # a Rust panic surfaces as pyo3's PanicException
                if isinstance(e, (KeyboardInterrupt, SystemExit)):
                    raise
                return fp, f"failed: {type(e).__name__}: {e}", time.time() - t0, None

        ex = ThreadPoolExecutor(max_workers=max(1, jobs))
        try:
            futs = [ex.submit(one, fp) for fp in todo]
            for f in as_completed(futs):
                fp, st, secs, s = f.result()
                status[fp.key] = st
                if st == "done":
                    info["ran"] += 1
                    line(fp, f"done in {secs:.1f} s ({_short(s, fct_class[fp.figure])})")
                elif st.startswith("failed"):
                    info["failed"] += 1
                    line(fp, st)
        except BaseException:
            cancel.set()
            ex.shutdown(wait=True, cancel_futures=True)
            raise
        ex.shutdown(wait=True)
    elif backend == "ray":
        if todo:
            sweep.run_ray(out, [fp.point for fp in todo], address=ray_address)
        for fp in todo:
            ok = sweep.is_done(out, fp.point)
            status[fp.key] = "done" if ok else "failed: no result from Ray"
            info["ran" if ok else "failed"] += 1
            line(fp, "done (ray)" if ok else status[fp.key])
    else:  # slurm
        if todo:
            info["script"] = sweep.write_slurm(out, [fp.point for fp in todo], partition=partition, time_limit=time_limit)
        for fp in todo:
            status[fp.key] = "pending"
            info["pending"] += 1
            line(fp, "pending (Slurm job array)")
    for fp in fps:
        if fp.key:
            fp.status = status.get(fp.key, "pending")
    return info


def _summary(out: Path, key: str) -> dict:
    return json.loads((out / "points" / key / "summary.json").read_text())


def _manifest(out: Path, key: str) -> dict:
    p = out / "points" / key / "manifest.json"
    return json.loads(p.read_text()) if p.exists() else {}


# --------------------------------------------------------------------------- numbers

def _stat(summary: dict, name: str) -> float:
    v = summary.get("fabric_stats", {}).get(name)
    if isinstance(v, (list, tuple)):
        v = max(v) if v else None
    return float("nan") if v is None else float(v)


def metrics_of(summary: dict, fct_class: str = "<100KB") -> dict:
    """The metrics panels and claims can name, from one summary.json."""
    fct = summary.get("fct", {}).get(fct_class, {}).get("p99_us")
    m = {
        "fct": float("nan") if fct is None else float(fct),
        "goodput": float(summary.get("goodput", float("nan"))),
        "offered_load": float(summary.get("offered_load", float("nan"))),
    }
    for metric, stat in STAT_KEYS.items():
        m[metric] = _stat(summary, stat) / 1e3
    return m


TABLE_COLUMNS = ["figure", "series", "fabric", "x", "status", "key", *METRICS, "completed", "flows", "sim_time_us", "wall_s"]


def table(out: Path, figs: list[Figure], fps: list[FigPoint]) -> pd.DataFrame:
    """One row per (figure, series, x): status and metrics (NaN if not run)."""
    cls = {f.id: f.fct_class for f in figs}
    rows = []
    for fp in fps:
        row: dict[str, Any] = {"figure": fp.figure, "series": fp.series, "fabric": fp.fabric, "x": fp.x, "status": fp.status, "key": fp.key or ""}
        if fp.status in ("done", "cached"):
            s = _summary(out, fp.key)
            row.update(metrics_of(s, cls[fp.figure]))
            row.update(completed=s.get("completed"), flows=s.get("flows"), sim_time_us=s.get("sim_time_us"),
                       wall_s=_manifest(out, fp.key).get("wall_s"))
        rows.append(row)
    df = pd.DataFrame(rows, columns=TABLE_COLUMNS)
    for c in ("completed", "flows"):
        df[c] = df[c].astype("Int64")
    return df


def _missing_reasons(df: pd.DataFrame, labels: Iterable[str], metric: str) -> dict[str, list[str]]:
    """Why series have no value of ``metric``: {reason: [series labels]}."""
    out: dict[str, list[str]] = {}
    for lab in labels:
        g = df[df["series"] == lab]
        bad = [s for s in g["status"] if s not in ("done", "cached")]
        if bad:
            why = bad[0]
        elif g[metric].isna().all():
            stat = STAT_KEYS.get(metric)
            why = f"no {stat} in fabric_stats" if stat else f"no {metric} in summary"
        else:
            continue
        out.setdefault(why, []).append(lab)
    return out


def _why_missing(df: pd.DataFrame, labels: Iterable[str], metric: str) -> str:
    r = _missing_reasons(df, labels, metric)
    return "; ".join(why if why.startswith(("skipped", "pending")) else f"{', '.join(labs)}: {why}" for why, labs in r.items()) or "no data"


def evaluate_claim(df: pd.DataFrame, c: dict) -> tuple[float, str]:
    """Our value of a claim, from one figure's rows; (NaN, reason) if it cannot be computed."""
    metric, kind = c["metric"], c["kind"]

    def val(label: str, x: float) -> float:
        g = df[(df["series"] == label) & df["x"].map(lambda v: math.isclose(v, x)) & df["status"].isin(["done", "cached"])]
        return float(g[metric].iloc[0]) if len(g) else float("nan")

    def combine(a: float, b: float) -> float:
        if kind == "value":
            return a
        r = a / b if b not in (0, 0.0) else float("nan")
        return 1 - r if kind == "reduction" else r

    labels = [c["a"]] + ([c["b"]] if kind != "value" else [])
    if "a_at" in c:
        v = combine(val(c["a"], c["a_at"]), val(c["b"], c["b_at"]) if kind != "value" else float("nan"))
    else:
        xs = sorted(set(df["x"]))
        at = c.get("at", "max")
        cand = xs if at in ("max", "min") else [float(at)]
        vals = [combine(val(c["a"], x), val(c["b"], x) if kind != "value" else float("nan")) for x in cand]
        vals = [x for x in vals if math.isfinite(x)]
        v = (max(vals) if at == "max" else min(vals)) if vals else float("nan")
    if math.isfinite(v):
        return v, ""
    return float("nan"), _why_missing(df, labels, metric)


NUMBERS_COLUMNS = ["figure", "quantity", "unit", "ours", "paper", "ratio", "difference", "paper_text", "note", "paper_quote"]


def numbers(figs: list[Figure], df: pd.DataFrame, scale: str, scale_about: str) -> pd.DataFrame:
    """One row per claim: our value, the paper's, ours/paper, ours − paper, a note."""
    rows = []
    for fig in figs:
        g = df[df["figure"] == fig.id]
        for c in fig.claims:
            ours, why = evaluate_claim(g, c)
            paper = c.get("paper")
            notes = []
            if why:
                notes.append(why)
            if "expect" in c and math.isfinite(ours):
                op, thr = _parse_expect("", c["expect"])
                if abs(ours - thr) <= 0.01 * max(abs(thr), 1e-12):
                    notes.append(f"no clear effect: within 1% of {thr:g} (paper: {c['expect']})")
                else:
                    ok = ours > thr if op == ">" else ours < thr
                    notes.append(f"{'as the paper says' if ok else 'unlike the paper'} ({c['expect']})")
            if c.get("scale_sensitive") and scale != "full":
                notes.append(f"{scale} scale ({scale_about.split(',')[0]}): absolute value not comparable with the paper's")
            if c.get("note"):
                notes.append(c["note"])
            unit = c.get("unit", {"ratio": "x", "reduction": "fraction"}.get(c["kind"], METRICS[c["metric"]][1]))
            have = paper is not None and math.isfinite(ours)
            rows.append({
                "figure": fig.id,
                "quantity": c["what"],
                "unit": unit,
                "ours": ours,
                "paper": paper if paper is not None else float("nan"),
                "ratio": ours / paper if have and paper else float("nan"),
                "difference": ours - paper if have else float("nan"),
                "paper_text": c.get("paper_text", ""),
                "note": "; ".join(notes),
                "paper_quote": c.get("quote", ""),
            })
    return pd.DataFrame(rows, columns=NUMBERS_COLUMNS)


# --------------------------------------------------------------------------- figures

def draw(fig: Figure, df: pd.DataFrame, path: Path, scale: str) -> Path:
    """The figure's panels side by side (2 x 2 for four), one line per series with data."""
    from . import plots  # late import: matplotlib
    import matplotlib.pyplot as plt

    n = len(fig.panels)
    rows, cols = (2, 2) if n == 4 else (1, n)
    f, axes = plt.subplots(rows, cols, figsize=(5.0 * cols, 3.7 * rows), squeeze=False)
    g = df[df["figure"] == fig.id]
    k = 100 if fig.x_percent else 1
    footer: list[str] = []
    for ax, panel in zip(axes.flat, fig.panels):
        metric = panel["metric"]
        missing = []
        drawn = 0
        positive = True
        for i, s in enumerate(fig.series):
            d = g[g["series"] == s.label].sort_values("x")
            d = d[d[metric].notna()]
            if d.empty:
                missing.append(s.label)
                continue
            positive &= bool((d[metric] > 0).all())
            ax.plot(d["x"] * k, d[metric], marker=plots.MARKERS[i % len(plots.MARKERS)], color=f"C{i}", label=s.label)
            drawn += 1
        if drawn and panel.get("logy") and positive:
            ax.set_yscale("log")
            _plain_log_labels(ax)
        if fig.logx:
            ax.set_xscale("log")
            ax.set_xticks([x * k for x in fig.xs], [f"{x * k:g}" for x in fig.xs])
            from matplotlib.ticker import NullLocator

            ax.xaxis.set_minor_locator(NullLocator())
        if not drawn:
            lo, hi = min(fig.xs) * k, max(fig.xs) * k
            ax.set_xlim(lo / 1.5, hi * 1.5) if fig.logx else ax.set_xlim(lo - 0.05 * (hi - lo), hi + 0.05 * (hi - lo))
        ax.set_xlabel(fig.xlabel)
        ax.set_ylabel(panel.get("ylabel") or METRICS[metric][0].format(cls=fig.fct_class))
        ax.set_title(panel.get("title", metric), fontsize=10)
        ax.grid(True, alpha=0.3)
        if drawn:
            ax.legend(fontsize=7)
        if missing:
            why = _why_missing(g, missing, metric)
            if drawn:
                footer += [f"not shown: {', '.join(labs)} ({r})" for r, labs in _missing_reasons(g, missing, metric).items()]
            else:
                ax.text(0.5, 0.5, _wrap("no data: " + why, 55), transform=ax.transAxes, ha="center", va="center",
                        fontsize=8, color="0.35")
    f.suptitle(f"{fig.title} [{scale} scale]", fontsize=11)
    f.tight_layout()
    if footer:
        f.text(0.5, 0.0, "\n".join(_wrap(t, 45 * cols * 2) for t in dict.fromkeys(footer)), ha="center", va="top",
               fontsize=7, color="0.35")
    return plots._save(f, path)


def _plain_log_labels(ax) -> None:
    """Tick labels like 50, 100, 200 on a log y axis (minor ones too when it spans < 1 decade)."""
    from matplotlib.ticker import FuncFormatter, NullFormatter

    from matplotlib.ticker import LogLocator

    fmt = FuncFormatter(lambda v, _: f"{v:g}")
    lo, hi = ax.get_ylim()
    if hi / lo >= 10:
        ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_minor_formatter(NullFormatter())
    else:
        ax.yaxis.set_minor_formatter(fmt)
    ax.yaxis.set_major_formatter(fmt)


def _wrap(text: str, width: int) -> str:
    import textwrap

    return "\n".join(textwrap.wrap(text, width))


# --------------------------------------------------------------------------- report

def _fmt(v: Any, digits: int = 3) -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "–"
    if isinstance(v, float):
        return f"{v:.{digits}g}" if abs(v) < 1e5 else f"{v:,.0f}"
    return str(v)


def _md_table(header: list[str], rows: list[list[str]]) -> str:
    esc = lambda s: str(s).replace("|", "\\|").replace("\n", " ")  # noqa: E731
    lines = ["| " + " | ".join(esc(h) for h in header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(esc(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


def _setup_rows(paper: Paper, figs: list[Figure], scale: str, overrides: Sequence[str]) -> list[list[str]]:
    def eff(sc: str) -> dict:
        cfg = _deepcopy(figs[0].base)
        apply_overrides(cfg, paper.scales[sc]["set"])
        if sc == scale:
            apply_overrides(cfg, list(overrides))
        return cfg

    full, ours = eff("full"), eff(scale)

    def get(cfg, dotted):
        node: Any = cfg
        for p in dotted.split("."):
            if not isinstance(node, dict) or p not in node:
                return "default"
            node = node[p]
        return json.dumps(node) if isinstance(node, (dict, list)) else str(node)

    keys = ["topology.racks", "topology.servers_per_rack", "topology.uplinks", "topology.uplink_rate", "workload.sizes", "workload.pattern", "stop.flows", "seed"]
    return [[k, get(full, k), get(ours, k)] for k in keys]


def write_report(
    out: Path,
    paper: Paper,
    figs: list[Figure],
    df: pd.DataFrame,
    nums: pd.DataFrame,
    *,
    scale: str,
    overrides: Sequence[str],
    info: dict,
    wall_s: float,
) -> Path:
    from . import _core
    from .api import _git_commit

    about = paper.scales[scale]["about"]
    commit = _git_commit()
    now = _dt.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    L: list[str] = []
    L.append(f"# Reproduction report: {paper.name}\n")
    L.append(f"Scale **{scale}**: {about}.  ")
    if overrides:
        L.append(f"Overrides: `{' '.join(overrides)}`.  ")
    L.append(f"Generated {now} by photonet {_core.__version__}" + (f" (git {commit[:10]})" if commit else "") + f" from `{paper.dir}`.  ")
    uniq = df[df["key"] != ""].drop_duplicates("key")
    sim_wall = pd.to_numeric(uniq["wall_s"], errors="coerce").sum()
    L.append(f"This invocation: {info['ran']} points run, {info['cached']} cached, {info['skipped']} skipped, "
             f"{info['failed']} failed, {info['pending']} pending; {wall_s:.1f} s wall "
             f"(simulation wall time of all finished points: {sim_wall:.1f} s).\n")
    skipped = df[df["status"].str.startswith("skipped")]
    if len(skipped):
        reasons = skipped["status"].value_counts()
        L.append("**Not run:** " + "; ".join(f"{r} ({c} points)" for r, c in reasons.items())
                 + ". Rerun the same command once they can run: finished points are kept and only the missing ones run.\n")
    failed = df[df["status"].str.startswith("failed")]
    if len(failed):
        L.append("**Failed points:**\n")
        for _, r in failed.drop_duplicates("key").iterrows():
            L.append(f"- {r['figure']} {r['series']} x={r['x']:g}: {r['status']}")
        L.append("")

    L.append("## The paper's numbers next to ours\n")
    L.append("`ours/paper` and `ours − paper` only where the paper states a number; "
             "`–` where we have no value (see the note). Quotes are from §7 of the paper.\n")
    rows = []
    for _, r in nums.iterrows():
        paper_v = _fmt(r["paper"]) if math.isfinite(r["paper"]) else (r["paper_text"] or "–")
        rows.append([r["figure"], r["quantity"], _fmt(r["ours"], 4), paper_v, _fmt(r["ratio"]), _fmt(r["difference"]), r["unit"], r["note"]])
    L.append(_md_table(["figure", "quantity", "ours", "paper", "ours/paper", "ours − paper", "unit", "note"], rows))
    L.append("")

    for fig in figs:
        g = df[df["figure"] == fig.id]
        L.append(f"## {fig.title}\n")
        L.append(f"![{fig.id}]({fig.id}.png)\n")
        L.append(f"Config: `{fig.path.name}`. " + (fig.notes + " " if fig.notes else ""))
        for panel in fig.panels:
            m = panel["metric"]
            label = METRICS[m][0].format(cls=fig.fct_class)
            L.append(f"\n**{panel.get('title', m)}**: {label}\n")
            header = [fig.xlabel] + [s.label for s in fig.series]
            trows = []
            for x in fig.xs:
                xl = f"{x * 100:g}" if fig.x_percent else f"{x:g}"
                cells = [xl]
                for s in fig.series:
                    r = g[(g["series"] == s.label) & g["x"].map(lambda v: math.isclose(v, x))]
                    if not len(r):
                        cells.append("–")
                        continue
                    r = r.iloc[0]
                    if r["status"] in ("done", "cached"):
                        cells.append(_fmt(r[m], 4))
                    else:
                        cells.append(r["status"].split(":")[0])
                trows.append(cells)
            L.append(_md_table(header, trows))
        claims = nums[nums["figure"] == fig.id]
        if len(claims):
            L.append("\nWhat the paper says:\n")
            for _, r in claims.iterrows():
                q = f" — “{r['paper_quote']}”" if r["paper_quote"] else ""
                L.append(f"- {r['quantity']}: ours {_fmt(r['ours'])}, paper {_fmt(r['paper']) if math.isfinite(r['paper']) else (r['paper_text'] or '–')}{q}")
        L.append("")

    L.append("## Setup\n")
    L.append(_md_table(["key", "paper (full)", f"this run ({scale})"], _setup_rows(paper, figs, scale, overrides)))
    L.append("\nCommon to every point: Poisson arrivals at load L = F / (R·N·τ), uniform random src ≠ dst; "
             "FCT = p99 of flows below 100 KB that finished; goodput = bytes received / simulated time / (N·R). "
             "Arrivals stop after `stop.flows` flows and the run ends then, as in the paper's fixed flow count; "
             "with Pareto(1.05) the realised offered load (column `offered_load` of points.csv) is well below L.\n")
    L.append("## Files\n")
    L.append("- `numbers.csv`: the table above (ours, paper, ratio, difference, note, quote)")
    L.append("- `points.csv`: every (figure, series, x): status, metrics, results key")
    L.append("- `figNN.png`: the figures; `points/<key>/`: each run's summary.json, flows.csv, manifest.json, config.toml")
    L.append(f"- rerun: `photonet reproduce {paper.name}{' --full' if scale == 'full' else ''} --out {out}` (finished points are skipped)")
    text = "\n".join(L) + "\n"
    atomic_write_text(out / "report.md", text)
    return out / "report.md"


# --------------------------------------------------------------------------- entry point

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
    jobs: int = 2,
    backend: str = "local",
    ray_address: Optional[str] = None,
    partition: Optional[str] = None,
    time_limit: str = "01:00:00",
    progress: Optional[ProgressFn] = None,
    root: Optional[Path] = None,
    available: Optional[Sequence[str]] = None,
) -> Reproduction:
    """Runs (resumably) and reports one paper's figures; see the module doc.

    ``only``: figure ids (``fig09`` / ``9``); ``fabrics``: run only these fabrics
    (the rest are reported as skipped); ``overrides``: ``key=value`` applied to
    every point after the scale; ``available``: the fabrics treated as built
    (default: this photonet's). Raises ConfigError for bad input, before running.
    """
    t0 = time.time()
    p = load_paper(paper, root)
    scale = "full" if full else "quick"
    out = Path(out) if out else Path("results") / "reproduce" / paper
    figs, fps = build_points(p, scale, only=only, fabrics=fabrics, overrides=overrides, available=available)
    info = run_points(out, figs, fps, jobs=jobs, backend=backend, ray_address=ray_address, partition=partition,
                      time_limit=time_limit, progress=progress)
    df = table(out, figs, fps)
    nums = numbers(figs, df, scale, p.scales[scale]["about"])
    pngs = [draw(f, df, out / f"{f.id}.png", scale) for f in figs]
    atomic_write_text(out / "points.csv", df.to_csv(index=False))
    atomic_write_text(out / "numbers.csv", nums.to_csv(index=False))
    report = write_report(out, p, figs, df, nums, scale=scale, overrides=overrides, info=info, wall_s=time.time() - t0)
    return Reproduction(out, scale, df, nums, pngs, report, info)


def run_cli(a, console, out_console) -> int:
    """``photonet reproduce``: the CLI handler (``a`` from argparse)."""
    from rich.table import Table

    names = papers() if a.paper == "all" else [a.paper]
    if not names:
        raise ConfigError(f"no experiments found in {experiments_root()}")
    only = [x for x in a.only.split(",") if x.strip()] if a.only else None
    fabrics = [x.strip() for x in a.fabrics.split(",") if x.strip()] if a.fabrics else None
    for name in names:
        load_paper(name)  # an unknown paper is an error before anything runs
    code = 0
    for name in names:
        if a.out:
            out = Path(a.out) / name if a.paper == "all" else Path(a.out)
        else:
            out = Path("results") / "reproduce" / name
        console.print(f"[bold]reproduce {name}[/] ({'full' if a.full else 'quick'} scale) -> {out}/")
        r = reproduce(name, out, full=a.full, only=only, fabrics=fabrics, overrides=list(a.set or []), jobs=a.jobs,
                      backend=a.backend, ray_address=a.ray_address, partition=a.partition, time_limit=a.time_limit,
                      progress=lambda line: console.print(line, markup=False, highlight=False, soft_wrap=True))
        t = Table(title=f"{name}: ours vs the paper ({r.scale} scale)")
        for c in ("figure", "quantity", "ours", "paper", "ours/paper", "note"):
            t.add_column(c, justify="right" if c in ("ours", "paper", "ours/paper") else "left", overflow="fold")
        for _, row in r.numbers.iterrows():
            paper_v = _fmt(row["paper"]) if math.isfinite(row["paper"]) else (row["paper_text"] or "–")
            t.add_row(row["figure"], row["quantity"], _fmt(row["ours"], 4), paper_v, _fmt(row["ratio"]), row["note"])
        out_console.print(t)
        i = r.info
        console.print(f"{i['ran']} run, {i['cached']} cached, {i['skipped']} skipped, {i['failed']} failed, {i['pending']} pending; "
                      f"wrote {out}/report.md, numbers.csv, points.csv, " + ", ".join(p.name for p in r.figures))
        if i["script"]:
            console.print(f"submit the pending points with `sbatch {i['script']}`, then rerun this command to draw and report them")
        if i["failed"]:
            code = 1
    return code
