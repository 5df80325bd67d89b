"""Plots (matplotlib, PNG). Every function takes a tidy DataFrame and a path."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from .io import atomic_write_bytes  # noqa: E402

MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*"]


def _save(fig, path: Path) -> Path:
    import io

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=130, bbox_inches="tight")
    plt.close(fig)
    atomic_write_bytes(path, buf.getvalue())
    return path


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
) -> Path:
    """One line per ``hue`` value of ``y`` against ``x``."""
    fig, ax = plt.subplots(figsize=(5.2, 3.6))
    for i, (name, g) in enumerate(df.sort_values(x).groupby(hue, sort=False)):
        xs = g[x] * (100 if percent_x else 1)
        ax.plot(xs, g[y], marker=MARKERS[i % len(MARKERS)], label=str(name))
    ax.set_xlabel(xlabel or x)
    ax.set_ylabel(ylabel or y)
    if logy:
        ax.set_yscale("log")
    if title:
        ax.set_title(title, fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
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
