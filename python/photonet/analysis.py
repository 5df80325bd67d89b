"""Analysis in Python: a sweep straight into a DataFrame, and the table of a
results folder.

    >>> import photonet
    >>> df = photonet.sweep("examples/esn_paper.toml", {"workload.load": [0.2, 0.5]}, jobs=2)
    >>> df[["workload.load", "goodput", "fct<100KB_censored_p99_us"]]
"""
from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Mapping, Optional, Sequence

import pandas as pd

from .config import ConfigError, ConfigLike


def sweep(
    config: ConfigLike,
    grid: Mapping[str, Sequence],
    *,
    jobs: int = 2,
    out: str | Path | None = None,
    overrides=None,
) -> pd.DataFrame:
    """Runs every point of ``grid`` (key -> values; the grid is their
    product) on ``config`` and returns one row per point: the swept values,
    then the flattened summary (goodput, FCT statistics per size class with
    the censored p99 beside the completed-only one, fabric statistics).

    ``jobs``: points run in parallel (threads; the core releases the GIL).
    ``out``: keep the points' results there (a later call skips points already
    done, like ``photonet sweep``); default: a temporary folder, removed after.
    Raises :class:`photonet.ConfigError` for bad input and ``RuntimeError``
    naming the failed points."""
    from . import sweep as sw

    if not grid:
        raise ConfigError("sweep: give at least one grid key, e.g. {'workload.load': [0.2, 0.5]}")
    g = {k: list(v) if isinstance(v, (list, tuple)) else [v] for k, v in grid.items()}
    points = sw.expand(config, g, overrides)
    with tempfile.TemporaryDirectory(prefix="photonet-sweep-") as tmp:
        folder = Path(out) if out is not None else Path(tmp)
        failures = sw.run_local(folder, points, jobs=jobs)
        if failures:
            raise RuntimeError(f"{len(failures)} sweep point(s) failed: " + "; ".join(map(str, failures)))
        return sw.collect(folder, points)


def collect(folder: str | Path, *, parquet: Optional[str | Path] = None) -> pd.DataFrame:
    """The table of every finished point under ``folder`` (a ``photonet
    sweep``, ``compare`` or ``reproduce`` output folder, or its ``points/``):
    one row per point, its swept parameters then its flattened summary.
    With ``parquet``, also writes the table there."""
    f = Path(folder)
    if f.name == "points" and not (f / "points").is_dir():
        f = f.parent
    if not (f / "points").is_dir():
        raise ConfigError(f"collect: {str(folder)!r} holds no sweep points (expected a folder with points/)")
    from . import sweep as sw

    df = sw.collect(f)
    if parquet is not None:
        df.to_parquet(parquet, index=False)
    return df
