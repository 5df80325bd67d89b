"""Plots (matplotlib). Every function takes a tidy DataFrame and a path.

Every fabric has one colour and one marker (:func:`style`), the same in every
plot photonet draws; a point flagged as unreliable (more than 5 % of its flows
unfinished) is drawn hollow. Figures are PNG, plus SVG/PDF beside them inside
:func:`also_write`."""
from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Iterator, Optional, Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from .io import atomic_write_bytes  # noqa: E402

MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*"]
# 16 colours distinguishable side by side (no two fabrics of one family share
# a colour: they are dealt in registry order, families interleaved).
PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
           "#bcbd22", "#393b79", "#637939", "#c49a00", "#7b4173", "#3182bd", "#e6550d", "#555555"]
FABRIC_MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*", "<", ">", "h", "p", "d", "8", "H", "o"]
# A point with more than this fraction of its flows unfinished is flagged.
UNFINISHED_FLAG = 0.05
FORMATS = ("png", "svg", "pdf")
_extra: list[str] = []


@contextlib.contextmanager
def also_write(formats: Sequence[str]) -> Iterator[None]:
    """Inside this block every figure saved as ``x.png`` is also written as
    ``x.svg`` / ``x.pdf`` for each format given (``png`` is always written)."""
    bad = [f for f in formats if f not in FORMATS]
    if bad:
        from .config import ConfigError

        raise ConfigError(f"figure format {bad[0]!r} is not known; expected some of {', '.join(FORMATS)}")
    old = list(_extra)
    _extra[:] = [f for f in formats if f != "png"]
    try:
        yield
    finally:
        _extra[:] = old


_STYLES: Optional[dict[str, tuple[str, str]]] = None


def _styles() -> dict[str, tuple[str, str]]:
    global _STYLES
    if _STYLES is None:
        from .api import fabrics

        _STYLES = {}
        for i, f in enumerate(fabrics()):
            st = (PALETTE[i % len(PALETTE)], FABRIC_MARKERS[i % len(FABRIC_MARKERS)])
            for key in (f.name, f.label, f.short):
                _STYLES.setdefault(key, st)
    return _STYLES


def style(fabric: str, index: int = 0) -> tuple[str, str]:
    """(colour, marker) of a fabric, by its name, label or short label; the
    same in every plot. Anything else gets one by ``index``."""
    st = _styles().get(fabric)
    if st is None and fabric:
        # Run labels may add the layout to the fabric's label ("SIRIUS 3x11").
        st = next((v for k, v in _styles().items() if fabric.startswith(k + " ")), None)
    return st or (f"C{index % 10}", MARKERS[index % len(MARKERS)])


def _save(fig, path: Path) -> Path:
    import io

    path = Path(path)
    for fmt in ["png", *_extra]:
        buf = io.BytesIO()
        fig.savefig(buf, format=fmt, dpi=130, bbox_inches="tight")
        atomic_write_bytes(path.with_suffix("." + fmt), buf.getvalue())
    plt.close(fig)
    return path


def plain_log_ticks(ax) -> None:
    """Tick labels like 100, 1,000, 10,000 on a log y axis (not 10²)."""
    from matplotlib.ticker import FuncFormatter, NullFormatter

    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}" if v >= 1 else f"{v:g}"))
    ax.yaxis.set_minor_formatter(NullFormatter())


def _series(ax, xs, ys, flagged, colour: str, marker: str, label: str) -> None:
    """One line with its markers (the legend's handle); the markers of
    flagged points redrawn hollow on top."""
    xs, ys, flagged = list(xs), list(ys), [bool(f) for f in flagged]
    ax.plot(xs, ys, color=colour, marker=marker, markersize=6, linewidth=1.4, label=label)
    hollow = [(x, y) for x, y, f in zip(xs, ys, flagged) if f]
    if hollow:
        ax.plot(*zip(*hollow), linestyle="none", marker=marker, markerfacecolor="white", markeredgecolor=colour,
                markeredgewidth=1.4, markersize=6)


def lines(
    df: pd.DataFrame,
    x: str,
    y: str,
    path: str | Path,
    *,
    hue: str = "fabric",
    xlabel: Optional[str] = None,
    ylabel: Optional[str] = None,
    title: Optional[str] = None,
    logy: bool = False,
    percent_x: bool = False,
    flag: Optional[str] = None,
) -> Path:
    """One line per ``hue`` value of ``y`` against ``x``, in the fabric's
    colour and marker; rows where column ``flag`` is true are hollow."""
    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    for i, (name, g) in enumerate(df.sort_values(x).groupby(hue, sort=False)):
        xs = g[x] * (100 if percent_x else 1)
        colour, marker = style(str(name), i)
        _series(ax, xs, g[y], g[flag] if flag else [False] * len(g), colour, marker, str(name))
    ax.set_xlabel(xlabel or x)
    ax.set_ylabel(ylabel or y)
    if logy:
        ax.set_yscale("log")
        plain_log_ticks(ax)
    if title:
        ax.set_title(title, fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return _save(fig, Path(path))


def facets(
    df: pd.DataFrame,
    x: str,
    y: str,
    path: str | Path,
    *,
    hue: str,
    facet: str,
    xlabel: str,
    ylabel: str,
    title: str,
    logy: bool = False,
    percent_x: bool = False,
    flag: Optional[str] = None,
    note: str = "",
    order: Sequence[str] = (),
    reference: Optional[str] = None,
) -> Path:
    """One small axis per ``facet`` value (a fabric family, in ``order``
    first), one line per ``hue`` value in the fabric's colour and marker, a
    shared y axis and each axis's legend outside its data (below it). Rows
    where ``flag`` is true are hollow. The rows of facet value ``reference``
    (the ideal network, a bound) are drawn dashed in every other axis
    instead of an axis of their own."""
    ref = df[df[facet] == reference] if reference is not None else df.iloc[0:0]
    rank = {v: i for i, v in enumerate(order)}
    groups = sorted(((k, g) for k, g in df[df[facet] != reference].groupby(facet, sort=False)),
                    key=lambda kg: rank.get(kg[0], len(rank)))
    if not groups and len(ref):
        groups, ref = [(reference, ref)], ref.iloc[0:0]
    n = max(1, len(groups))
    cols = min(3, n)
    rows = (n + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(4.1 * cols, 3.5 * rows), sharey=True, squeeze=False)
    for ax, (fam, g) in zip(axes.flat, groups):
        for i, (name, h) in enumerate(g.sort_values(x).groupby(hue, sort=False)):
            colour, marker = style(str(name), i)
            _series(ax, h[x] * (100 if percent_x else 1), h[y], h[flag] if flag else [False] * len(h), colour, marker, str(name))
        for name, h in ref.sort_values(x).groupby(hue, sort=False):
            ax.plot(h[x] * (100 if percent_x else 1), h[y], color="0.45", linestyle="--", linewidth=1.2, label=f"{name} (bound)")
        ax.set_title(str(fam), fontsize=10)
        ax.set_xlabel(xlabel)
        ax.grid(True, alpha=0.3)
        if logy:
            ax.set_yscale("log")
            plain_log_ticks(ax)
        ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.2), frameon=False, ncol=2)
    for ax in axes[:, 0]:
        ax.set_ylabel(ylabel)
    for ax in list(axes.flat)[len(groups):]:
        ax.set_visible(False)
    fig.suptitle(title, fontsize=11)
    if note:
        fig.text(0.5, -0.01, note, ha="center", va="top", fontsize=8, color="0.35")
    fig.tight_layout()
    return _save(fig, Path(path))


def bars(df: pd.DataFrame, x: str, y: str, path: str | Path, *, ylabel: str = "", title: str = "",
         errlo: Optional[str] = None, errhi: Optional[str] = None) -> Path:
    fig, ax = plt.subplots(figsize=(5.2, 3.6))
    err = None
    if errlo and errhi:
        err = [df[y] - df[errlo], df[errhi] - df[y]]
    ax.bar(df[x].astype(str), df[y], yerr=err, capsize=4, color="#4c72b0")
    ax.set_ylabel(ylabel or y)
    if title:
        ax.set_title(title, fontsize=10)
    ax.grid(True, axis="y", alpha=0.3)
    plt.setp(ax.get_xticklabels(), rotation=20, ha="right")
    return _save(fig, Path(path))
