"""Loading and validating an experiment directory (``experiments/<paper>/``).

The directory holds ``experiment.toml`` (scales, metrics, the report's prose)
and one TOML file per figure. A simulated figure is an ordinary photonet
config plus a ``[reproduce]`` table (x axis, series, panels, claims); a model
figure's ``[reproduce]`` names a registered analytical model, and the rest of
its file is the model's parameters. Everything paper-specific lives in those
files; this module only checks them, and every error names the file, the key,
the value and why.
"""
from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Optional, Sequence

from ..api import stat_name_matches, statistics
from ..config import ConfigError, read_config_text, tomllib

SCALES = ("quick", "full")
EXPERIMENT_FILE = "experiment.toml"

# FCT statistics of a size class in summary.json's `fct` (key = stat + "_us";
# `count` and `unfinished` are numbers of flows). Plain statistics are over
# completed flows; `censored_*` count unfinished flows at their elapsed time
# (lower bounds on the true statistic).
FCT_STATS = ("p50", "p90", "p99", "p999", "mean", "max", "count", "unfinished",
             "censored_p50", "censored_p90", "censored_p99", "censored_p999", "censored_mean")
# Statistics of a size class read from the point's flows.csv, not summary.json:
# `share_within` (with `within_us`), the share of the class's flows that
# finished within that many µs, unfinished ones counting as not.
FLOW_STATS = ("share_within",)
# Per-flow comparisons with the figure's `reference` (another simulator's
# flows.csv: src, dst, bytes, start_us, fct_us), flows matched by (src, dst,
# bytes, start): the largest, mean and 99th-percentile relative FCT
# difference |ours / theirs - 1| over the flows both finished.
REFERENCE_STATS = ("max_rel_err", "mean_rel_err", "p99_rel_err")
# Numeric top-level keys of summary.json a metric may name.
SUMMARY_KEYS = ("goodput", "goodput_steady", "offered_load", "completed", "flows", "unfinished", "sim_time_us", "delivered_bytes",
                "offered_bytes", "events", "hosts", "host_rate_bps")
SIM_PANEL_KINDS = ("line", "bar", "cdf", "scatter", "timeseries")
MODEL_PANEL_KINDS = ("line", "bar")
CLAIM_KINDS = ("value", "ratio", "reduction")

_TOP_KEYS = {"title", "report", "scales", "metrics", "reading", "claims"}
_REPORT_KEYS = {"intro", "quotes", "common", "setup_keys"}
_METRIC_KEYS = {"fct", "class", "summary", "fabric_stat", "reference", "scale", "unit", "label", "within_us", "stream"}
# Keys of one stream of a mixed workload (summary.json's `streams`, from
# `workload.overlay`) a `summary` metric with `stream` may name.
STREAM_KEYS = ("flows", "events", "events_unfinished", "event_finish_mean_us")
_SIM_KEYS = {"title", "x", "x_key", "x_values", "x_set", "xlabel", "x_percent", "logx", "series", "panels", "claims",
             "notes", "reference", "scales", "flows", *SCALES}
_REFERENCE_KEYS = {"flows", "label", "start_offset_us"}
_MODEL_KEYS = {"title", "model", "options", "panels", "claims", "notes"}
_SERIES_KEYS = {"label", "fabric", "set"}
_PANEL_KEYS = {
    "line": {"kind", "metric", "title", "logy", "ylabel"},
    "bar": {"kind", "metric", "at", "title", "logy", "ylabel"},
    "cdf": {"kind", "at", "class", "title", "logx"},
    "scatter": {"kind", "at", "class", "title"},
    "timeseries": {"kind", "at", "title"},
}
_MODEL_PANEL_KEYS = {"kind", "data", "x", "y", "legend", "title", "xlabel", "ylabel", "logy"}
_CLAIM_COMMON = {"what", "figure", "paper", "paper_text", "expect", "quote", "unit", "note", "tolerance", "range", "sanity", "gap"}
# What a claim checks, decided when the experiment loads (``claim_check``):
#   "number":  the paper's number (`paper`) within a relative `tolerance`
#              (the claim's, else [claims] tolerance of experiment.toml);
#   "range":   a range the paper states (`range` = [lo, hi]), ours inside it;
#   "words":   a qualitative statement: `expect` ("> x" / "< x") with its `quote`;
#   "sanity":  `sanity = true` with an `expect`: a consequence of the inputs
#              (arithmetic, a latency ordering the parameters guarantee),
#              reported apart and never counted as reproducing the paper.
# Only the first three count in the scorecard. `gap` = why ours differs
# (a measurement), which makes a missed claim an explained gap.
CHECKS = ("number", "range", "words", "sanity")
_SIM_CLAIM_KEYS = _CLAIM_COMMON | {"metric", "kind", "a", "b", "at", "a_at", "b_at", "scale_sensitive"}
_MODEL_CLAIM_KEYS = _CLAIM_COMMON | {"value"}


# --------------------------------------------------------------------------- data

@dataclass
class Metric:
    """A number read from one point's summary.json, times ``scale``."""

    name: str
    source: str                   # "fct" | "summary" | "fabric_stat" | "reference"
    key: str                      # FCT statistic, summary key or fabric_stats key
    fct_class: str = "all"        # size class (source "fct" only)
    scale: float = 1.0
    unit: str = ""
    label: str = ""
    within_us: Optional[float] = None   # `fct = "share_within"` only
    stream: Optional[int] = None        # a mixed workload's stream (0: the main one)

    def describe(self) -> str:
        """Where the number comes from, for 'no data' notes."""
        if self.source == "fct":
            return f"{self.key} FCT of class {self.fct_class}"
        if self.source == "reference":
            return f"{self.key} of FCTs against the figure's reference"
        return f"{self.key} in {'fabric_stats' if self.source == 'fabric_stat' else 'summary'}"


@dataclass
class Series:
    label: str
    fabric: str
    set: dict


@dataclass(frozen=True)
class Reference:
    """Another simulator's per-flow results for a figure's runs (a CSV with
    src, dst, bytes, start_us, fct_us): drawn beside ours (cdf and scatter
    panels) and compared flow by flow (``reference`` metrics). ``start_offset_us``
    is subtracted from its starts: the time its flows' starts are offset by
    from the run's (a simulator that starts its flows 1 s in)."""

    flows: Path
    label: str = "reference"
    start_offset_us: float = 0.0


@dataclass
class Figure:
    """One figure file: a simulated figure (``model`` is None) or a model's."""

    id: str
    path: Path
    title: str
    panels: list[dict]
    claims: list[dict]
    notes: str = ""
    # simulated figures
    base: dict = field(default_factory=dict)      # the run config (without [reproduce])
    xs: list = field(default_factory=list)        # x values: all numbers or all strings (categorical)
    x_sets: list[dict] = field(default_factory=list)
    xlabel: str = "x"
    x_percent: bool = False
    logx: bool = False
    series: list[Series] = field(default_factory=list)
    scale_set: dict[str, dict] = field(default_factory=dict)
    reference: Optional[Reference] = None         # another simulator's per-flow results
    # the scales it runs at (a figure whose published numbers exist only for
    # the full setting, say, runs at full scale only)
    scales: tuple = SCALES
    # `flows = true`: every point keeps its per-flow records (flows.parquet)
    # even where no panel, reference or metric of the figure reads them
    flows: bool = False
    # model figures
    model: Optional[str] = None
    params: dict = field(default_factory=dict)   # model parameters (the file without [reproduce])
    options: dict = field(default_factory=dict)

    @property
    def is_model(self) -> bool:
        return self.model is not None

    @property
    def numeric_x(self) -> bool:
        return all(is_num(x) for x in self.xs)


@dataclass
class Paper:
    name: str
    dir: Path
    title: str
    scales: dict[str, dict]       # scale -> {"about": str, "set": {key: value}}
    metrics: dict[str, Metric]    # in declaration order
    report: dict                  # intro, quotes, common, setup_keys
    figures: list[Figure]
    # The one reading of the paper's text every figure uses: {"about": str,
    # "set": {key: value}} applied to every point before the scale's overrides.
    # ``alternatives``: other readings [{name, set, metrics, only}] whose claims
    # the report tables next to this one's (the sensitivity table).
    reading: dict = field(default_factory=lambda: {"about": "", "set": {}, "alternatives": []})

    def figure_ids(self) -> list[str]:
        return [f.id for f in self.figures]


# --------------------------------------------------------------------------- helpers

def is_num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def x_equal(a: Any, b: Any) -> bool:
    """x values match: numbers within float noise, anything else exactly."""
    if is_num(a) and is_num(b):
        return math.isclose(a, b)
    return a == b


def fmt_x(x: Any) -> str:
    return f"{x:g}" if is_num(x) else str(x)


def read_toml(p: Path) -> dict:
    return tomllib.loads(read_config_text(p))


def unknown(where: str, got: Iterable[str], allowed: set) -> None:
    bad = sorted(set(got) - allowed)
    if bad:
        raise ConfigError(f"{where}: unknown key(s) {', '.join(map(repr, bad))}; expected {', '.join(sorted(allowed))}")


def _table(where: str, key: str, v: Any) -> dict:
    if not isinstance(v, dict):
        raise ConfigError(f"{where}: `{key}` = {v!r} must be a table")
    return v


def _str(where: str, key: str, v: Any) -> str:
    if not isinstance(v, str):
        raise ConfigError(f"{where}: `{key}` = {v!r} must be a string")
    return v


def _bool(where: str, key: str, v: Any) -> bool:
    if not isinstance(v, bool):
        raise ConfigError(f"{where}: `{key}` = {v!r} must be true or false")
    return v


# --------------------------------------------------------------------------- the directory

def experiments_root() -> Path:
    """``$PHOTONET_EXPERIMENTS``, else ``experiments/`` of the repository, else of the cwd."""
    env = os.environ.get("PHOTONET_EXPERIMENTS")
    if env:
        return Path(env)
    repo = Path(__file__).resolve().parents[3] / "experiments"
    for cand in (repo, Path.cwd() / "experiments"):
        if cand.is_dir():
            return cand
    return repo


def papers(root: Optional[Path] = None) -> list[str]:
    """Experiment directories that ``reproduce`` can run."""
    root = Path(root) if root else experiments_root()
    if not root.is_dir():
        return []
    return sorted(d.name for d in root.iterdir() if d.is_dir() and (d / EXPERIMENT_FILE).exists())


def load_paper(name: str, root: Optional[Path] = None) -> Paper:
    """Reads and checks ``<root>/<name>/``: experiment.toml and every figure file."""
    root = Path(root) if root else experiments_root()
    d = root / name
    exp = d / EXPERIMENT_FILE
    if not exp.exists():
        known = papers(root)
        raise ConfigError(f"paper {name!r} has no experiments in {root} (no {EXPERIMENT_FILE}); "
                          f"expected one of {', '.join(known) or '(none)'}")
    raw = read_toml(exp)
    unknown(str(exp), raw, _TOP_KEYS)
    scales = _load_scales(exp, raw.get("scales"))
    reading = _load_reading(exp, raw.get("reading", {}))
    metrics = _load_metrics(exp, raw.get("metrics", {}))
    report = _load_report(exp, raw.get("report", {}))
    for a in reading["alternatives"]:
        for k, v in a["metrics"].items():
            for m in (k, v):
                if m not in metrics:
                    raise ConfigError(f"{exp}: [reading] alternative {a['name']!r}: metric {m!r} is not declared in [metrics]")
    title = _str(str(exp), "title", raw.get("title", name))
    files = [p for p in sorted(d.glob("*.toml")) if p.name != EXPERIMENT_FILE]
    figures = [_load_figure(p, metrics) for p in files]
    claims_t = _table(str(exp), "claims", raw.get("claims", {}))
    unknown(f"{exp}: [claims]", claims_t, {"tolerance", "about"})
    default_tol = claims_t.get("tolerance")
    if default_tol is not None and (not is_num(default_tol) or not 0 < default_tol < 10):
        raise ConfigError(f"{exp}: [claims] `tolerance` = {default_tol!r} must be a relative tolerance such as 0.25 (±25 %)")
    for f in figures:
        for c in f.claims:
            c["check"] = claim_check(f"{f.path}: [reproduce] claim {c['what']!r}", c, default_tol)
    ids = [f.id for f in figures]
    dup = {i for i in ids if ids.count(i) > 1}
    if dup:
        raise ConfigError(f"{d}: two figure files share the id(s) {sorted(dup)} (the file name up to the first '_')")
    return Paper(name, d, title, scales, metrics, report, figures, reading)


def _load_reading(exp: Path, raw: Any) -> dict:
    """``[reading]``: ``about`` (why, shown in the report) and ``set``
    (overrides of every point of every figure, at every scale)."""
    where = f"{exp}: [reading]"
    t = _table(str(exp), "reading", raw)
    unknown(where, t, {"about", "set", "alternatives"})
    alts = t.get("alternatives", [])
    if not isinstance(alts, list):
        raise ConfigError(f"{where}: `alternatives` = {alts!r} must be an array of tables ([[reading.alternatives]])")
    out_alts = []
    for i, a in enumerate(alts):
        w = f"{where}.alternatives[{i}]"
        a = _table(where, f"alternatives[{i}]", a)
        unknown(w, a, {"name", "set", "metrics", "only"})
        if "name" not in a:
            raise ConfigError(f"{w}: missing `name` (the column heading of the sensitivity table)")
        only = a.get("only", [])
        if not isinstance(only, list) or not all(isinstance(x, str) for x in only):
            raise ConfigError(f"{w}: `only` = {only!r} must be a list of figure ids")
        mm = dict(_table(w, "metrics", a.get("metrics", {})))
        for k, v in mm.items():
            if not isinstance(v, str):
                raise ConfigError(f"{w}: `metrics.{k}` = {v!r} must name a metric")
        out_alts.append({"name": _str(w, "name", a["name"]), "set": dict(_table(w, "set", a.get("set", {}))),
                         "metrics": mm, "only": list(only)})
    return {"about": _str(where, "about", t.get("about", "")), "set": dict(_table(where, "set", t.get("set", {}))),
            "alternatives": out_alts}


def _load_scales(exp: Path, raw: Any) -> dict[str, dict]:
    if raw is None:
        raise ConfigError(f"{exp}: missing [scales] ({', '.join(f'[scales.{s}]' for s in SCALES)}: the overrides of each scale)")
    raw = _table(str(exp), "scales", raw)
    unknown(f"{exp}: [scales]", raw, set(SCALES))
    out = {}
    for s in SCALES:
        t = raw.get(s)
        if not isinstance(t, dict):
            raise ConfigError(f"{exp}: missing table [scales.{s}]")
        where = f"{exp}: [scales.{s}]"
        if "figures" in t:
            raise ConfigError(f"{where}: `figures` is not a key here: a figure says the scales it runs at, "
                              f"`scales` = [\"full\"] in its [reproduce] table (default: every scale)")
        unknown(where, t, {"about", "set"})
        out[s] = {"about": _str(where, "about", t.get("about", s)), "set": dict(_table(where, "set", t.get("set", {})))}
    return out


def _load_report(exp: Path, raw: Any) -> dict:
    where = f"{exp}: [report]"
    raw = _table(str(exp), "report", raw)
    unknown(where, raw, _REPORT_KEYS)
    out = {k: _str(where, k, raw.get(k, "")) for k in ("intro", "quotes", "common")}
    keys = raw.get("setup_keys", [])
    if not isinstance(keys, list) or not all(isinstance(k, str) and k for k in keys):
        raise ConfigError(f"{where}: `setup_keys` = {keys!r} must be a list of config keys such as \"topology.racks\"")
    out["setup_keys"] = list(keys)
    return out


def _load_metrics(exp: Path, raw: Any) -> dict[str, Metric]:
    raw = _table(str(exp), "metrics", raw)
    out: dict[str, Metric] = {}
    for name, t in raw.items():
        where = f"{exp}: [metrics.{name}]"
        if not isinstance(t, dict):
            raise ConfigError(f"{where}: must be a table with one of `fct`, `summary`, `fabric_stat`")
        out[name] = parse_metric(where, name, t)
    return out


def check_fabric_stat(where: str, key: Any) -> None:
    """A ``fabric_stat`` must be a statistic some registered fabric declares
    (see ``photonet.api.statistics``); the error lists the valid names."""
    declared = sorted({s.name for s in statistics()})
    if not isinstance(key, str) or not any(stat_name_matches(d, key) for d in declared):
        raise ConfigError(f"{where}: `fabric_stat` = {key!r} is not a statistic any fabric declares (a key of a "
                          f"summary's fabric_stats); expected one of {', '.join(declared)}")


def parse_metric(where: str, name: str, t: dict) -> Metric:
    """One ``[metrics.<name>]`` table: exactly one source (``fct = "p99"`` with
    ``class``, ``summary = "<key>"`` or ``fabric_stat = "<key>"``), then
    ``scale`` (a factor, default 1), ``unit`` and ``label`` (the axis label)."""
    unknown(where, t, _METRIC_KEYS)
    sources = [k for k in ("fct", "summary", "fabric_stat", "reference") if k in t]
    if len(sources) != 1:
        got = f"got {', '.join(f'`{k}`' for k in sources)}" if sources else "got none"
        raise ConfigError(f"{where}: give exactly one of `fct` (a statistic of a size class), `summary` (a summary.json key), "
                          f"`fabric_stat` (a fabric_stats key) or `reference` (a per-flow comparison); {got}")
    src = sources[0]
    key = t[src]
    if src == "fct":
        if key not in FCT_STATS + FLOW_STATS:
            raise ConfigError(f"{where}: `fct` = {key!r} is not an FCT statistic; expected one of {', '.join(FCT_STATS + FLOW_STATS)}")
        cls = t.get("class", "all")
        if not isinstance(cls, str) or not cls:
            raise ConfigError(f"{where}: `class` = {cls!r} must be a size class such as \"<100KB\" or \"all\"")
    else:
        if "class" in t:
            raise ConfigError(f"{where}: `class` = {t['class']!r} applies to `fct` metrics only")
        cls = "all"
        if src == "summary" and "stream" in t and key not in STREAM_KEYS:
            raise ConfigError(f"{where}: `summary` = {key!r} is not a key of a stream; expected one of {', '.join(STREAM_KEYS)}")
        if src == "summary" and "stream" not in t and key not in SUMMARY_KEYS:
            raise ConfigError(f"{where}: `summary` = {key!r} is not a numeric summary.json key; expected one of {', '.join(SUMMARY_KEYS)}")
        if src == "reference" and key not in REFERENCE_STATS:
            raise ConfigError(f"{where}: `reference` = {key!r} is not known; expected one of {', '.join(REFERENCE_STATS)}")
        if src == "fabric_stat":
            check_fabric_stat(where, key)
    within = t.get("within_us")
    if (src == "fct" and key == "share_within") != (within is not None):
        raise ConfigError(f"{where}: `within_us` = {within!r} goes with `fct = \"share_within\"` (and it needs one)")
    if within is not None and (not is_num(within) or within <= 0):
        raise ConfigError(f"{where}: `within_us` = {within!r} must be a positive number of µs")
    stream = t.get("stream")
    if stream is not None and (not isinstance(stream, int) or isinstance(stream, bool) or stream < 0
                               or src not in ("fct", "summary") or key == "share_within"):
        raise ConfigError(f"{where}: `stream` = {stream!r} must be a stream index >= 0 (0: the main stream, k: "
                          "`workload.overlay[k-1]`), on an `fct` (not share_within) or `summary` metric")
    scale = t.get("scale", 1.0)
    if not is_num(scale) or not math.isfinite(scale) or scale == 0:
        raise ConfigError(f"{where}: `scale` = {scale!r} must be a finite, non-zero number (the metric is the statistic times it)")
    unit = _str(where, "unit", t.get("unit", ""))
    label = _str(where, "label", t.get("label", name))
    return Metric(name, src, key, cls, float(scale), unit, label, float(within) if within is not None else None, stream)


# --------------------------------------------------------------------------- figure files

def _load_figure(path: Path, metrics: dict[str, Metric]) -> Figure:
    cfg = read_toml(path)
    rep = cfg.pop("reproduce", None)
    where = f"{path}: [reproduce]"
    if not isinstance(rep, dict):
        raise ConfigError(f"{path}: no [reproduce] table (what to sweep and draw, or which model to evaluate)")
    fid = path.stem.split("_", 1)[0]
    if "model" in rep:
        return _load_model_figure(path, fid, cfg, rep, where)
    return _load_sim_figure(path, fid, cfg, rep, where, metrics)


def _load_sim_figure(path: Path, fid: str, cfg: dict, rep: dict, where: str, metrics: dict[str, Metric]) -> Figure:
    unknown(where, rep, _SIM_KEYS)
    xs = rep.get("x")
    if not isinstance(xs, list) or not xs or not (all(is_num(v) for v in xs) or all(isinstance(v, str) for v in xs)):
        raise ConfigError(f"{where}: `x` = {xs!r} must be a non-empty list of numbers (an x axis) or of strings (categories)")
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
    xs = [float(v) if is_num(v) else v for v in xs]
    numeric = all(is_num(v) for v in xs)
    series = []
    for i, s in enumerate(rep.get("series", [])):
        if not isinstance(s, dict) or "label" not in s or "fabric" not in s:
            raise ConfigError(f"{where}: series #{i + 1} needs `label` and `fabric`")
        unknown(f"{where} series {s['label']!r}", s, _SERIES_KEYS)
        series.append(Series(str(s["label"]), str(s["fabric"]), dict(s.get("set", {}))))
    if not series:
        raise ConfigError(f"{where}: `series` is empty")
    labels = [s.label for s in series]
    if len(set(labels)) != len(labels):
        raise ConfigError(f"{where}: series labels must be distinct")
    panels = [_check_sim_panel(where, i, p, metrics, xs, numeric) for i, p in enumerate(rep.get("panels", []))]
    if not panels:
        raise ConfigError(f"{where}: `panels` is empty")
    reference = _load_reference(where, rep["reference"], path.parent) if "reference" in rep else None
    for i, p in enumerate(panels):
        if p["kind"] == "scatter" and reference is None:
            raise ConfigError(f"{where} panel #{i + 1} (scatter): a scatter plots each flow's FCT against the reference's; "
                              f"set the figure's `reference` = {{ flows = \"<a CSV>\" }}")
    for m in metrics.values():
        if m.source == "reference" and reference is None and any(c.get("metric") == m.name for c in rep.get("claims", [])):
            raise ConfigError(f"{where}: a claim on metric {m.name!r} (a per-flow comparison) needs the figure's `reference`")
    claims = [_check_sim_claim(where, c, labels, xs, metrics) for c in rep.get("claims", [])]
    scale_set = {}
    for s in SCALES:
        t = rep.get(s, {})
        _table(where, s, t)
        unknown(f"{where}.{s}", t, {"set"})
        scale_set[s] = dict(t.get("set", {}))
    scales = rep.get("scales", list(SCALES))
    if not isinstance(scales, list) or not scales or any(s not in SCALES for s in scales):
        raise ConfigError(f"{where}: `scales` = {scales!r} must be a non-empty list of {', '.join(SCALES)}")
    keep_flows = _bool(where, "flows", rep.get("flows", False))
    return Figure(
        id=fid,
        path=path.resolve(),
        title=str(rep.get("title", path.stem)),
        panels=panels,
        claims=claims,
        notes=str(rep.get("notes", "")),
        base=cfg,
        xs=xs,
        x_sets=x_sets,
        xlabel=str(rep.get("xlabel", rep.get("x_key", "x"))),
        x_percent=bool(rep.get("x_percent", False)),
        logx=bool(rep.get("logx", False)),
        series=series,
        scale_set=scale_set,
        reference=reference,
        scales=tuple(scales),
        flows=keep_flows,
    )


# The columns a reference's `flows` file needs.
REFERENCE_COLUMNS = ("src", "dst", "bytes", "start_us", "fct_us")


def _load_reference(where: str, t: Any, base: Path) -> Reference:
    """A figure's `reference` = { flows = "<CSV beside the figure>", label =
    "<its name>", start_offset_us = <µs its starts are offset by> }."""
    w = f"{where} reference"
    t = _table(where, "reference", t)
    unknown(w, t, _REFERENCE_KEYS)
    if "flows" not in t:
        raise ConfigError(f"{w}: `flows` is missing: the CSV of the other simulator's per-flow results")
    name = _str(w, "flows", t["flows"])
    path = (base / name).resolve()
    if not path.is_file():
        raise ConfigError(f"{w}: `flows` = {name!r} is not a file (relative to {base})")
    with open(path) as f:
        head = [c.strip() for c in f.readline().strip().split(",")]
    miss = [c for c in REFERENCE_COLUMNS if c not in head]
    if miss:
        raise ConfigError(f"{w}: `flows` = {name!r} lacks the column(s) {', '.join(miss)} "
                          f"(it needs {', '.join(REFERENCE_COLUMNS)}, one row per flow)")
    offset = t.get("start_offset_us", 0)
    if not is_num(offset) or not math.isfinite(offset) or offset < 0:
        raise ConfigError(f"{w}: `start_offset_us` = {offset!r} must be a number of µs >= 0")
    return Reference(path, _str(w, "label", t.get("label", "reference")), float(offset))


def _check_at(where: str, key: str, v: Any, xs: list, extra: str = "") -> None:
    if not any(type(v) is not bool and x_equal(v, x) for x in xs):
        raise ConfigError(f"{where}: `{key}` = {v!r} is not one of the x values {[fmt_x(x) for x in xs]}{extra}")


def _panel_kind(where: str, i: int, p: Any, kinds: tuple, for_what: str = "") -> tuple[str, str]:
    """Panel #i's kind (default "line"), checked against ``kinds``, and the
    panel's name for messages."""
    if not isinstance(p, dict):
        raise ConfigError(f"{where}: panel #{i + 1} = {p!r} must be a table")
    kind = p.get("kind", "line")
    if kind not in kinds:
        raise ConfigError(f"{where} panel #{i + 1}: `kind` = {kind!r} is not known{for_what}; expected one of {', '.join(kinds)}")
    return kind, f"{where} panel #{i + 1} ({kind})"


def _check_sim_panel(where: str, i: int, p: Any, metrics: dict[str, Metric], xs: list, numeric: bool) -> dict:
    kind, w = _panel_kind(where, i, p, SIM_PANEL_KINDS)
    unknown(w, p, _PANEL_KEYS[kind])
    if kind in ("line", "bar"):
        if p.get("metric") not in metrics:
            raise ConfigError(f"{w}: `metric` = {p.get('metric')!r} is not declared in [metrics]; "
                              f"expected one of {', '.join(metrics) or '(none declared)'}")
    if kind == "line" and not numeric:
        raise ConfigError(f"{w}: a line needs a numeric x axis, and `x` is categorical; use kind = \"bar\"")
    if kind in ("cdf", "scatter", "timeseries"):
        if "at" not in p and len(xs) != 1:
            raise ConfigError(f"{w}: say at which x value to draw, `at` = one of {[fmt_x(x) for x in xs]}")
    if "at" in p:
        _check_at(w, "at", p["at"], xs)
    for k in ("logy", "logx"):
        if k in p:
            _bool(w, k, p[k])
    if kind in ("cdf", "scatter") and not isinstance(p.get("class", "all"), str):
        raise ConfigError(f"{w}: `class` = {p['class']!r} must be a size class such as \"<100KB\", \">=100KB\" or \"all\"")
    if kind in ("cdf", "scatter"):
        parse_class(w, p.get("class", "all"))
    return {"kind": kind, **p}


def claim_check(w: str, c: dict, default_tol: Optional[float] = None) -> str:
    """Which of CHECKS a claim is (see CHECKS); sets its `tolerance` from the
    experiment's default when it states a number without one. An error when it
    is none of them: a claim that cannot fail is not a reproduction."""
    if c.get("sanity"):
        if "expect" not in c:
            raise ConfigError(f"{w}: a sanity line (`sanity = true`) needs `expect`, the check the inputs guarantee")
        if "tolerance" in c or "range" in c:
            raise ConfigError(f"{w}: a sanity line checks `expect` only; drop `tolerance`/`range`")
        return "sanity"
    if "range" in c:
        if "tolerance" in c:
            raise ConfigError(f"{w}: give `range` or `tolerance`, not both")
        return "range"
    if "paper" in c:
        if "tolerance" not in c:
            if default_tol is None:
                raise ConfigError(f"{w}: `paper` = {c['paper']!r} needs a `tolerance` (relative, e.g. 0.25) "
                                  f"or a [claims] tolerance in experiment.toml")
            c["tolerance"] = float(default_tol)
        return "number"
    if "tolerance" in c:
        raise ConfigError(f"{w}: `tolerance` applies to a `paper` number; this claim has none")
    if "expect" in c and c.get("quote"):
        return "words"
    raise ConfigError(f"{w}: a claim must check something: a `paper` number (with `tolerance`), a `range`, "
                      f"an `expect` with the paper's `quote`, or `sanity = true` with an `expect`; got "
                      f"{', '.join(sorted(k for k in c if k in _CLAIM_COMMON)) or 'none'}")


def _check_claim_common(w: str, c: dict) -> None:
    if "expect" in c:
        parse_expect(w, c["expect"])
    if "tolerance" in c and (not is_num(c["tolerance"]) or not 0 < c["tolerance"] < 10):
        raise ConfigError(f"{w}: `tolerance` = {c['tolerance']!r} must be a relative tolerance such as 0.25 (±25 %)")
    if "range" in c:
        r = c["range"]
        if not (isinstance(r, list) and len(r) == 2 and all(is_num(v) for v in r) and r[0] <= r[1]):
            raise ConfigError(f"{w}: `range` = {r!r} must be [low, high], the paper's stated range")
    if "sanity" in c:
        _bool(w, "sanity", c["sanity"])
    if "paper" in c and not is_num(c["paper"]):
        raise ConfigError(f"{w}: `paper` = {c['paper']!r} must be a number (use `paper_text` for words)")
    for k in ("figure", "paper_text", "quote", "unit", "note", "gap"):
        if k in c:
            _str(w, k, c[k])


def _check_sim_claim(where: str, c: Any, labels: list[str], xs: list, metrics: dict[str, Metric]) -> dict:
    if not isinstance(c, dict) or "what" not in c:
        raise ConfigError(f"{where}: a claim needs `what`")
    w = f"{where} claim {c['what']!r}"
    unknown(w, c, _SIM_CLAIM_KEYS)
    if c.get("metric") not in metrics:
        raise ConfigError(f"{w}: `metric` = {c.get('metric')!r} is not declared in [metrics]; "
                          f"expected one of {', '.join(metrics) or '(none declared)'}")
    kind = c.get("kind", "value")
    if kind not in CLAIM_KINDS:
        raise ConfigError(f"{w}: `kind` = {kind!r} is not known; expected one of {', '.join(sorted(CLAIM_KINDS))}")
    need = ["a"] if kind == "value" else ["a", "b"]
    for k in need:
        if c.get(k) not in labels:
            raise ConfigError(f"{w}: `{k}` = {c.get(k)!r} is not a series label; expected one of {labels}")
    for k in ("at", "a_at", "b_at"):
        v = c.get(k)
        if v is None or (k == "at" and v in ("max", "min", "geomean")):
            continue
        _check_at(w, k, v, xs, " (or \"max\"/\"min\"/\"geomean\")" if k == "at" else "")
    if ("a_at" in c) != ("b_at" in c) and kind != "value":
        raise ConfigError(f"{w}: give both `a_at` and `b_at` (or `at`)")
    if "scale_sensitive" in c:
        _bool(w, "scale_sensitive", c["scale_sensitive"])
    _check_claim_common(w, c)
    return {"kind": kind, "at": "max", **c}


def parse_expect(where: str, e: Any) -> tuple[str, float]:
    """``expect = "> 1"``: the direction the paper states, checked against ours."""
    if isinstance(e, str):
        parts = e.split()
        if len(parts) == 2 and parts[0] in ("<", ">"):
            try:
                return parts[0], float(parts[1])
            except ValueError:
                pass
    raise ConfigError(f"{where}: `expect` = {e!r}: expected \"> number\" or \"< number\"")


def _load_model_figure(path: Path, fid: str, params: dict, rep: dict, where: str) -> Figure:
    unknown(where, rep, _MODEL_KEYS)
    model = _str(where, "model", rep["model"])
    options = dict(_table(where, "options", rep.get("options", {})))
    panels = []
    for i, p in enumerate(rep.get("panels", [])):
        kind, w = _panel_kind(where, i, p, MODEL_PANEL_KINDS, " for a model")
        unknown(w, p, _MODEL_PANEL_KEYS)
        for k in ("data", "x"):
            _str(w, k, p.get(k))
        y = p.get("y")
        if not (isinstance(y, str) or (isinstance(y, list) and y and all(isinstance(v, str) for v in y))):
            raise ConfigError(f"{w}: `y` = {y!r} must be a field name or a list of them")
        if "logy" in p:
            _bool(w, "logy", p["logy"])
        n = 1 if isinstance(y, str) else len(y)
        leg = p.get("legend")
        if leg is not None and not (isinstance(leg, list) and len(leg) == n and all(isinstance(v, str) for v in leg)):
            raise ConfigError(f"{w}: `legend` = {leg!r} must be a list of {n} string(s), one per `y`")
        panels.append({"kind": kind, **p, "y": [y] if isinstance(y, str) else list(y)})
    claims = []
    for c in rep.get("claims", []):
        if not isinstance(c, dict) or "what" not in c:
            raise ConfigError(f"{where}: a claim needs `what`")
        w = f"{where} claim {c['what']!r}"
        unknown(w, c, _MODEL_CLAIM_KEYS)
        _str(w, "value", c.get("value"))
        _check_claim_common(w, c)
        claims.append({"kind": "value", **c})
    return Figure(id=fid, path=path.resolve(), title=str(rep.get("title", path.stem)), panels=panels, claims=claims,
                  notes=str(rep.get("notes", "")), model=model, params=params, options=options)


_SIZE = re.compile(r"\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([A-Za-z]*)\s*")
_SIZE_UNITS = {"": 1, "B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "KIB": 2**10, "MIB": 2**20, "GIB": 2**30}


def parse_size(where: str, text: str) -> float:
    """``"100KB"`` -> 100000 bytes (KB = 1000 B, KiB = 1024 B), as configs write sizes."""
    m = _SIZE.fullmatch(text)
    unit = m.group(2).upper() if m else None
    if not m or unit not in _SIZE_UNITS:
        raise ConfigError(f"{where}: {text!r} is not a size such as \"100KB\" or \"64KiB\"")
    return float(m.group(1)) * _SIZE_UNITS[unit]


def parse_class(where: str, cls: str) -> tuple[float, float]:
    """A size class as summary.json names them (``all``, ``<100KB``, ``>=100KB``)
    -> [lo, hi) in bytes."""
    w = f"{where}: `class` = {cls!r}"
    if cls == "all":
        return 0.0, math.inf
    if cls.startswith(">="):
        return parse_size(w, cls[2:]), math.inf
    if cls.startswith("<"):
        return 0.0, parse_size(w, cls[1:])
    raise ConfigError(f"{w} is not a size class; expected \"all\", \"<SIZE\" or \">=SIZE\"")


def claim_reads(c: dict, xs: Sequence[Any]) -> list[tuple[str, Any]]:
    """The (series, x) points whose metric
    :func:`~photonet.reproduce.numbers.evaluate_claim` reads for
    claim ``c`` of a figure with x values ``xs``: series ``a`` (and ``b``,
    unless a ``value``) at ``a_at`` / ``b_at``, at ``at``, or at every x for
    ``at`` = max / min / geomean. A reading alternative runs only these
    (:func:`~photonet.reproduce.points.build_points` ``claims_only``), so
    this follows evaluate_claim line by line; tests/test_reproduce_claims.py
    checks on every claim in experiments/ that the two agree."""
    labels = [c["a"]] + ([c["b"]] if c["kind"] != "value" else [])
    if "a_at" in c:
        return [(lab, x) for lab, at in zip(labels, (c["a_at"], c.get("b_at"))) for x in xs if x_equal(x, at)]
    at = c.get("at", "max")
    return [(lab, x) for lab in labels for x in xs if at in ("max", "min", "geomean") or x_equal(x, at)]
