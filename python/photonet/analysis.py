"""Analysis in Python: a sweep straight into a DataFrame, and the table of a
results folder.

    >>> import photonet
    >>> df = photonet.sweep("examples/esn_paper.toml", {"workload.load": [0.2, 0.5]}, jobs=2)
    >>> df[["workload.load", "goodput", "fct<100KB_censored_p99_us"]]
"""
from __future__ import annotations

from pathlib import Path
from typing import Mapping, Optional, Sequence

import pandas as pd

from .config import ConfigError, ConfigLike


def sweep(config: ConfigLike, grid: Mapping[str, Sequence], **kwargs) -> pd.DataFrame:
    """``photonet.sweep``: see :func:`photonet.sweep.run_grid`."""
    from .sweep import run_grid

    return run_grid(config, grid, **kwargs)


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
