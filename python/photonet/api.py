"""The Python API: ``photonet.run(config) -> Result``. The CLI is built on it."""
from __future__ import annotations

import json
import os
import platform
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

import numpy as np
import pandas as pd

from . import _core
from .config import ConfigError, ConfigLike, complete, config_hash, tomllib, workload_search_path
from .io import atomic_dir, atomic_write_json, atomic_write_text

ProgressFn = Callable[[float, int, int, int], Optional[bool]]


@dataclass
class Result:
    """One simulation's outputs.

    ``summary``: goodput, FCT percentiles by size class, fabric statistics (the
    content of summary.json). ``flows``: one row per flow (times in µs; ``fct_us``
    is NaN for flows unfinished at the end). ``series``: delivered goodput per
    time bin (normalised by N·R) when ``metrics.time_series`` is set.
    ``manifest``: config, seed, version, wall time, event count.
    """

    summary: dict
    flows: pd.DataFrame
    series: Optional[pd.DataFrame]
    manifest: dict
    config_toml: str
    cancelled: bool = False
    extra: dict = field(default_factory=dict)

    @property
    def fabric(self) -> str:
        return self.summary["fabric"]

    def fct(self, size_class: str = "all", stat: str = "p99_us") -> float:
        """An FCT statistic of a size class, e.g. ``fct("<100KB", "p99_us")``."""
        c = self.summary["fct"].get(size_class)
        v = None if c is None else c.get(stat)
        return float("nan") if v is None else float(v)

    def write(self, out_dir: str | Path, extra: Optional[dict[str, Any]] = None) -> Path:
        """Writes summary.json, flows.csv, series.csv (if any), manifest.json,
        config.toml and the ``extra`` JSON files (name -> object) into ``out_dir``
        in one atomic step (all or nothing). ``out_dir`` may be new, empty or an
        earlier photonet result; anything else (a file, a folder holding other
        files) raises :class:`photonet.io.OutputError` (a ConfigError) and is
        left untouched."""

        def fill(tmp: Path) -> None:
            atomic_write_json(tmp / "summary.json", self.summary)
            atomic_write_text(tmp / "flows.csv", self.flows.to_csv(index=False))
            if self.series is not None:
                atomic_write_text(tmp / "series.csv", self.series.to_csv(index=False))
            atomic_write_json(tmp / "manifest.json", self.manifest)
            atomic_write_text(tmp / "config.toml", self.config_toml)
            for name, obj in (extra or {}).items():
                atomic_write_json(tmp / name, obj)

        return atomic_dir(out_dir, fill)


def _with_override(overrides, key: str, value):
    """``overrides`` (a list of ``key=value`` or a dict) plus one more."""
    if overrides is None:
        return {key: value}
    if isinstance(overrides, dict):
        return {**overrides, key: value}
    return [*overrides, f"{key}={'true' if value is True else value}"]


def _git_commit() -> Optional[str]:
    try:
        root = Path(__file__).resolve().parents[2]
        out = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5)
        return out.stdout.strip() or None
    except Exception:
        return None


def run(
    config: ConfigLike | None = None,
    *,
    overrides=None,
    progress: Optional[ProgressFn] = None,
    base_dir: str | Path | None = None,
) -> Result:
    """Runs one simulation.

    ``config``: a TOML file path, TOML text, or a dict (missing keys take their
    defaults). ``overrides``: ``["workload.load=0.7", ...]`` or a dict
    ``{"workload.load": 0.7}``. ``progress(now_us, arrived, completed, events)``
    is called now and then; returning False stops the run early. ``base_dir``:
    where relative file names resolve when ``config`` is not a file.
    Raises :class:`photonet.ConfigError` for bad input, before simulating.
    """
    if os.environ.get("PHOTONET_CHECK_INVARIANTS") == "1":
        # Test runs check every fabric invariant after every event.
        overrides = _with_override(overrides, "metrics.check_invariants", True)
    text, base = complete(config, overrides, base_dir)
    started = time.time()
    try:
        raw = _core.run(text, str(base) if base else None, workload_search_path(), progress)
    except _core.ConfigError as e:
        raise ConfigError(str(e)) from None
    summary = json.loads(raw["summary"])
    f = raw["flows"]
    # Columns arrive as little-endian bytes (see _core.run); finish_ps is
    # u64::MAX for unfinished flows.
    # Integer columns as int64, as pandas makes of Python ints.
    col = lambda k, t: np.frombuffer(f[k], dtype=t).astype(np.int64)  # noqa: E731
    finish = np.frombuffer(f["finish_ps"], dtype="<u8")
    flows = pd.DataFrame(
        {
            "id": col("id", "<u4"),
            "src": col("src", "<u4"),
            "dst": col("dst", "<u4"),
            "bytes": col("bytes", "<u8"),
            "start_us": col("start_ps", "<u8") / 1e6,
            "finish_us": np.where(finish == np.iinfo(np.uint64).max, np.nan, finish / 1e6),
            "delivered_bytes": col("delivered_bytes", "<u8"),
        }
    )
    flows["fct_us"] = flows["finish_us"] - flows["start_us"]
    series = None
    if raw["series"] is not None:
        s = raw["series"]
        bin_us = s["bin_ps"] / 1e6
        cap_bytes_per_bin = summary["hosts"] * summary["host_rate_bps"] * (s["bin_ps"] / 1e12) / 8
        series = pd.DataFrame(
            {
                "t_us": [i * bin_us for i in range(len(s["bytes"]))],
                "bytes": s["bytes"],
            }
        )
        series["goodput"] = series["bytes"] / cap_bytes_per_bin
    seed = tomllib.loads(text).get("seed")
    manifest = {
        "photonet_version": _core.__version__,
        "git_commit": _git_commit(),
        "config_hash": config_hash(text),
        "seed": seed,
        "fabric": summary["fabric"],
        "wall_s": raw["wall_s"],
        "events": summary["events"],
        "sim_time_us": summary["sim_time_us"],
        "started_unix": started,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cancelled": raw["cancelled"],
        "config": text,
    }
    return Result(summary, flows, series, manifest, text, cancelled=raw["cancelled"])


def default_config() -> str:
    """The complete default config as TOML."""
    return _core.default_config()


@dataclass(frozen=True)
class FabricInfo:
    """One registered fabric: ``name`` (the value of ``fabric = ...``), ``label``
    (as shown in tables and plots), ``table`` (the config table holding its
    parameters, shared by a fabric's variants) and a one-line ``description``."""

    name: str
    label: str
    table: str
    description: str


def fabrics() -> list[FabricInfo]:
    """Every registered fabric, in the order ``compare`` runs them."""
    out = []
    for f in _core.fabrics():
        out.append(FabricInfo(**f) if isinstance(f, dict) else FabricInfo(f, f, f, ""))
    return out


def fabric_names() -> list[str]:
    """Names accepted by ``fabric = ...``, in the order ``compare`` runs them."""
    return [f.name for f in fabrics()]
