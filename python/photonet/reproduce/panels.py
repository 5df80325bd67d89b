"""Drawing a figure file's panels, side by side (2 x 2 for four), into one PNG.

Panel kinds of a simulated figure:

* ``line``: a metric against the (numeric) x axis, one line per series;
* ``bar``: a metric per series at one x (``at``), or grouped by x (categorical
  x axes too);
* ``cdf``: the per-flow FCT CDF (flows.csv) of each series at one x, for one
  size class; when the figure has a ``reference`` (another simulator's
  per-flow results), its CDF too (dashed);
* ``scatter``: each flow's FCT against the figure's ``reference``'s for the
  same flow (matched by src, dst, bytes and start), at one x, for one size
  class;
* ``timeseries``: delivered goodput over time (series.csv) of each series at
  one x (the config must set ``metrics.time_series``).

A model figure draws ``line`` and ``bar`` panels from a list of records in the
model's report (``data``), ``y`` against ``x``.

A series without data is named, with the reason, under the panel (or in it
when nothing could be drawn).
"""
from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any, Optional

import pandas as pd

from .experiment import Figure, Metric, fmt_x, is_num, x_equal
from .models import ModelRun, records
from .numbers import (OK, at_x, class_fcts, flows_of, match_reference, missing_reasons, parse_class, series_of,
                      why_missing)


def wrap(text: str, width: int) -> str:
    return "\n".join(textwrap.wrap(text, width))


def _plain_log_labels(ax, axis: str = "y") -> None:
    """Tick labels like 50, 100, 200 on a log axis (minor ones too when it spans < 1 decade)."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    fmt = FuncFormatter(lambda v, _: f"{v:g}")
    a = ax.yaxis if axis == "y" else ax.xaxis
    lo, hi = ax.get_ylim() if axis == "y" else ax.get_xlim()
    if hi / lo >= 10:
        a.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        a.set_minor_formatter(NullFormatter())
    else:
        a.set_minor_formatter(fmt)
    a.set_major_formatter(fmt)


def _styles(fig: Figure) -> list[tuple[str, str]]:
    """(colour, marker) per series: the fabric's own (the same in every plot
    photonet draws) when each series is a different fabric, else one per
    series (a figure that varies a knob of one fabric)."""
    from .. import plots

    fabs = [s.fabric for s in fig.series]
    if len(set(fabs)) == len(fabs):
        return [plots.style(f, i) for i, f in enumerate(fabs)]
    return [(f"C{i % 10}", plots.MARKERS[i % len(plots.MARKERS)]) for i in range(len(fabs))]


def paper_points(fig: Figure, metric: str) -> list[tuple[str, Any, float]]:
    """(series label, x, paper value) of the figure's claims that state one
    number of ``metric`` for one series at one x."""
    out = []
    for c in fig.claims:
        if c.get("kind", "value") != "value" or c.get("metric") != metric or not is_num(c.get("paper")):
            continue
        at = c.get("a_at", c.get("at"))
        if at is None or at in ("max", "min"):
            if len(fig.xs) != 1:
                continue
            at = fig.xs[0]
        out.append((c["a"], at, float(c["paper"])))
    return out


PAPER_STYLE = dict(marker="*", color="black", markersize=11, linestyle="none", zorder=5, markerfacecolor="gold")


class _Panel:
    """What one panel drew: lines/bars drawn, and why the others are missing."""

    def __init__(self) -> None:
        self.drawn = 0
        self.hollow = False
        self.missing: dict[str, list[str]] = {}

    def miss(self, why: str, label: str) -> None:
        self.missing.setdefault(why, []).append(label)

    def why(self) -> str:
        return "; ".join(w if w.startswith(("skipped", "pending")) else f"{', '.join(labs)}: {w}" for w, labs in self.missing.items()) or "no data"


def _line(ax, fig: Figure, g: pd.DataFrame, panel: dict, metric: Metric) -> _Panel:
    from .. import plots

    res = _Panel()
    k = 100 if fig.x_percent else 1
    missing = []
    positive = True
    styles = _styles(fig)
    for i, s in enumerate(fig.series):
        d = g[g["series"] == s.label].sort_values("x")
        d = d[d[metric.name].notna()]
        if d.empty:
            missing.append(s.label)
            continue
        positive &= bool((d[metric.name] > 0).all())
        colour, marker = styles[i]
        flagged = [f > 0 and 1 - c / f > plots.UNFINISHED_FLAG if f == f and c == c else False
                   for c, f in zip(d["completed"].astype(float), d["flows"].astype(float))] if "flows" in d else [False] * len(d)
        plots._series(ax, d["x"] * k, d[metric.name], flagged, colour, marker, s.label)
        res.hollow |= any(flagged)
        res.drawn += 1
    marks = [(x, v) for lab, x, v in paper_points(fig, metric.name) if is_num(x)]
    if res.drawn and marks:
        positive &= all(v > 0 for _, v in marks)
        ax.plot([x * k for x, _ in marks], [v for _, v in marks], label="paper", **PAPER_STYLE)
    if res.drawn and panel.get("logy") and positive:
        ax.set_yscale("log")
        _plain_log_labels(ax)
    if fig.logx:
        ax.set_xscale("log")
        ax.set_xticks([x * k for x in fig.xs], [f"{x * k:g}" for x in fig.xs])
        from matplotlib.ticker import NullLocator

        ax.xaxis.set_minor_locator(NullLocator())
    if not res.drawn:
        lo, hi = min(fig.xs) * k, max(fig.xs) * k
        ax.set_xlim(lo / 1.5, hi * 1.5) if fig.logx else ax.set_xlim(lo - 0.05 * (hi - lo), hi + 0.05 * (hi - lo))
    ax.set_xlabel(fig.xlabel)
    ax.set_ylabel(wrap(panel.get("ylabel") or metric.label, 38))
    res.missing = missing_reasons(g, missing, metric)
    if missing and not res.missing:
        res.missing = {why_missing(g, missing, metric): missing}
    return res


def _xlabel_of(fig: Figure, x: Any) -> str:
    if fig.x_percent and isinstance(x, float):
        return f"{x * 100:g}%"
    return fmt_x(x)


def _bar(ax, fig: Figure, g: pd.DataFrame, panel: dict, metric: Metric) -> _Panel:
    res = _Panel()
    xs = [panel["at"]] if "at" in panel else list(fig.xs)
    n = len(fig.series)
    width = 0.8 / max(1, n)
    missing = []
    styles = _styles(fig)
    paper = paper_points(fig, metric.name)
    for i, s in enumerate(fig.series):
        vals = []
        for x in xs:
            r = g[(g["series"] == s.label) & g["x"].map(lambda v, x=x: x_equal(v, x))]
            vals.append(float(r[metric.name].iloc[0]) if len(r) else float("nan"))
        if all(v != v for v in vals):
            missing.append(s.label)
            continue
        pos = [i] if "at" in panel else [j + (i - (n - 1) / 2) * width for j in range(len(xs))]
        ax.bar(pos, vals, width=0.8 if "at" in panel else width, color=styles[i][0], label=s.label)
        for px, x in zip(pos, xs):
            for lab, at, v in paper:
                if lab == s.label and x_equal(at, x):
                    ax.plot([px], [v], label="paper" if "paper" not in ax.get_legend_handles_labels()[1] else None, **PAPER_STYLE)
        res.drawn += 1
    if "at" in panel:
        ax.set_xticks(range(n), [s.label for s in fig.series], rotation=20, ha="right")
        ax.set_xlabel(f"{fig.xlabel} = {_xlabel_of(fig, panel['at'])}")
    else:
        ax.set_xticks(range(len(xs)), [_xlabel_of(fig, x) for x in xs])
        ax.set_xlabel(fig.xlabel)
    if res.drawn and panel.get("logy"):
        ax.set_yscale("log")
    ax.set_ylabel(panel.get("ylabel") or metric.label)
    res.missing = missing_reasons(g[g["x"].map(lambda v: any(x_equal(v, x) for x in xs))], missing, metric)
    return res


def _at(fig: Figure, panel: dict) -> Any:
    return panel.get("at", fig.xs[0])


def _point_data(out: Path, df: pd.DataFrame, fig: Figure, label: str, x: Any, what: str, res: _Panel):
    """(row, data) of one series at x, or None after recording why not."""
    row = at_x(df, fig, label, x)
    if row is None:
        res.miss("no such point", label)
        return None
    if row["status"] not in OK:
        res.miss(row["status"], label)
        return None
    data = flows_of(out, row["key"]) if what == "flows" else series_of(out, row["key"])
    if data is None:
        res.miss("no flows.csv" if what == "flows" else "no series.csv (set metrics.time_series in the figure's config)", label)
        return None
    return data


def _cdf(ax, fig: Figure, df: pd.DataFrame, panel: dict, out: Path) -> _Panel:
    from .. import plots

    res = _Panel()
    lo, hi = parse_class("cdf panel", panel.get("class", "all"))
    x = _at(fig, panel)
    styles = _styles(fig)
    nflows = 0
    for i, s in enumerate(fig.series):
        flows = _point_data(out, df, fig, s.label, x, "flows", res)
        if flows is None:
            continue
        nflows = max(nflows, len(flows))
        fct, unfinished = class_fcts(flows, lo, hi)
        if fct.empty:
            res.miss(f"no finished flow of class {panel.get('class', 'all')}", s.label)
            continue
        y = (pd.RangeIndex(1, len(fct) + 1) / len(fct)).to_numpy()
        lab = s.label + (f" ({unfinished} unfinished)" if unfinished else "")
        ax.step(fct, y, where="post", color=styles[i][0], label=lab, marker=styles[i][1], markevery=max(1, len(fct) // 6))
        res.drawn += 1
    if res.drawn and fig.reference is not None:
        # The reference's same flows: its first rows, as many as the run has.
        ref = pd.read_csv(fig.reference.flows)
        label = fig.reference.label
        if nflows < len(ref):
            ref, label = ref.iloc[:nflows], f"{label} (its first {nflows} flows)"
        fct, _ = class_fcts(ref, lo, hi)
        y = (pd.RangeIndex(1, len(fct) + 1) / len(fct)).to_numpy()
        ax.step(fct, y, where="post", color="black", linestyle="--", label=label)
    if res.drawn and panel.get("logx", True):
        ax.set_xscale("log")
    cls = panel.get("class", "all")
    ax.set_xlabel("FCT of all flows (µs)" if cls == "all" else f"FCT of flows {cls} (µs)")
    ax.set_ylabel("fraction of finished flows")
    ax.set_ylim(0, 1.02)
    return res


def _scatter(ax, fig: Figure, df: pd.DataFrame, panel: dict, out: Path) -> _Panel:
    """Each flow's FCT in each series against the figure's reference's for
    the same flow (:func:`match_reference`), for one size class."""
    res = _Panel()
    cls = panel.get("class", "all")
    lo, hi = parse_class("scatter panel", cls)
    x = _at(fig, panel)
    styles = _styles(fig)
    low, top = float("inf"), 0.0
    for i, s in enumerate(fig.series):
        flows = _point_data(out, df, fig, s.label, x, "flows", res)
        if flows is None:
            continue
        j = match_reference(flows, fig.reference).dropna(subset=["fct_us", "fct_ref_us"])
        j = j[(j["bytes"] >= lo) & (j["bytes"] < hi)]
        if not len(j):
            res.miss(f"no finished flow of class {cls} matches the reference", s.label)
            continue
        ax.scatter(j["fct_ref_us"], j["fct_us"], s=4, alpha=0.5, color=styles[i][0], marker=styles[i][1],
                   label=f"{s.label} ({len(j)} flows)", rasterized=True)
        low = min(low, float(j["fct_ref_us"].min()), float(j["fct_us"].min()))
        top = max(top, float(j["fct_ref_us"].max()), float(j["fct_us"].max()))
        res.drawn += 1
    if res.drawn:
        ax.plot([low, top], [low, top], color="0.5", linewidth=0.8, label="equal")
        if top / max(low, 1e-9) > 50:
            ax.set_xscale("log")
            ax.set_yscale("log")
            _plain_log_labels(ax, "x")
            _plain_log_labels(ax, "y")
    ax.set_xlabel(f"FCT, {fig.reference.label} (µs)")
    ax.set_ylabel("FCT, photonet (µs)")
    return res


def _timeseries(ax, fig: Figure, df: pd.DataFrame, panel: dict, out: Path) -> _Panel:
    res = _Panel()
    x = _at(fig, panel)
    styles = _styles(fig)
    for i, s in enumerate(fig.series):
        ser = _point_data(out, df, fig, s.label, x, "series", res)
        if ser is None:
            continue
        ax.plot(ser["t_us"], ser["goodput"], color=styles[i][0], label=s.label, linewidth=1)
        res.drawn += 1
    ax.set_xlabel("time (µs)")
    ax.set_ylabel("goodput / (N·R)")
    return res


def _model_panel(ax, panel: dict, run: Optional[ModelRun]) -> _Panel:
    from .. import plots

    res = _Panel()
    if run is None or run.report is None:
        for y in panel["y"]:
            res.miss(run.status if run else "not evaluated", y)
        return res
    rows = pd.DataFrame(records(run.report, panel["data"], [panel["x"], *panel["y"]]))
    n = len(panel["y"])
    names = panel.get("legend", panel["y"])
    for i, (y, name) in enumerate(zip(panel["y"], names)):
        if panel["kind"] == "line":
            ax.plot(rows[panel["x"]], rows[y], marker=plots.MARKERS[i % len(plots.MARKERS)], color=f"C{i}", label=name)
        else:
            width = 0.8 / n
            ax.bar([j + (i - (n - 1) / 2) * width for j in range(len(rows))], rows[y], width=width, color=f"C{i}", label=name)
        res.drawn += 1
    if panel["kind"] == "bar":
        ax.set_xticks(range(len(rows)), [str(v) for v in rows[panel["x"]]], rotation=20, ha="right")
    elif len(rows) <= 12:  # a short sweep: tick exactly its x values
        ax.set_xticks(list(rows[panel["x"]]), [fmt_x(v) for v in rows[panel["x"]]])
    if panel.get("logy"):
        ax.set_yscale("log")
        _plain_log_labels(ax)
    ax.set_xlabel(panel.get("xlabel", panel["x"]))
    ax.set_ylabel(panel.get("ylabel", ", ".join(panel["y"])))
    return res


def draw(
    fig: Figure,
    df: pd.DataFrame,
    path: Path,
    scale: str,
    *,
    metrics: Optional[dict[str, Metric]] = None,
    out: Optional[Path] = None,
    model: Optional[ModelRun] = None,
) -> Path:
    """Draws every panel of ``fig`` into ``path`` (PNG). ``df`` is points.csv's
    table; ``out`` the reproduction's directory (for flows.csv/series.csv);
    ``model`` the evaluation of a model figure."""
    from .. import plots  # late import: matplotlib
    import matplotlib.pyplot as plt

    metrics = metrics or {}
    out = Path(out) if out else path.parent
    n = len(fig.panels)
    rows, cols = (2, 2) if n == 4 else (1, n)
    f, axes = plt.subplots(rows, cols, figsize=(6.2 * cols, 3.7 * rows), squeeze=False)
    g = df[df["figure"] == fig.id] if len(df) else df
    footer: list[str] = []
    for ax, panel in zip(axes.flat, fig.panels):
        kind = panel["kind"]
        if fig.is_model:
            res = _model_panel(ax, panel, model)
        elif kind == "line":
            res = _line(ax, fig, g, panel, metrics[panel["metric"]])
        elif kind == "bar":
            res = _bar(ax, fig, g, panel, metrics[panel["metric"]])
        elif kind == "cdf":
            res = _cdf(ax, fig, df, panel, out)
        elif kind == "scatter":
            res = _scatter(ax, fig, df, panel, out)
        else:
            res = _timeseries(ax, fig, df, panel, out)
        if not fig.is_model and kind in ("cdf", "scatter", "timeseries"):
            what = {"cdf": "FCT CDF", "scatter": "per-flow FCT", "timeseries": "goodput over time"}[kind]
            if fig.reference is not None and kind != "timeseries":
                what += f" vs {fig.reference.label}"
            ax.set_title(panel.get("title", f"{what} at {fig.xlabel} = {_xlabel_of(fig, _at(fig, panel))}"), fontsize=10)
        else:
            ax.set_title(panel.get("title", panel.get("metric", panel.get("data", kind))), fontsize=10)
        ax.grid(True, alpha=0.3)
        if res.drawn:
            handles, labels = ax.get_legend_handles_labels()
            ax.legend(handles, [wrap(lab, 28) for lab in labels], fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0),
                      frameon=False)
        if res.hollow:
            footer.append("hollow markers: more than 5 % of the point's flows unfinished (FCTs count them at their elapsed time)")
        if res.missing:
            if res.drawn:
                footer += [f"not shown: {', '.join(labs)} ({r})" for r, labs in res.missing.items()]
            else:
                ax.text(0.5, 0.5, wrap("no data: " + res.why(), 55), transform=ax.transAxes, ha="center", va="center",
                        fontsize=8, color="0.35")
    f.suptitle(f"{fig.title}" + ("" if fig.is_model else f" [{scale} scale]"), fontsize=11)
    f.tight_layout()
    if footer:
        f.text(0.5, 0.0, "\n".join(wrap(t, 45 * cols * 2) for t in dict.fromkeys(footer)), ha="center", va="top",
               fontsize=7, color="0.35")
    return plots._save(f, path)
