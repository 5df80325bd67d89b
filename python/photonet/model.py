"""The analytical power and cost model of Sirius §5 (Fig. 6a, 6b) and §2's
scale tax (Fig. 2a), as pandas DataFrames.

The Rust core (``photonet::model``) owns the model, its parameters, defaults
and validation; this module loads parameters from an optional TOML file plus
``key=value`` overrides, and turns the core's report into tables and files.

    >>> from photonet import model
    >>> r = model.power_cost(overrides=["count_rack_switches=false"])
    >>> r.power[["tunable_power_multiplier", "sirius_vs_esn"]]
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

import pandas as pd

from . import _core
from .config import ConfigError, ConfigLike, load, to_toml

PAPER_KEYS_POWER = {3.0: "power_vs_esn_3x", 5.0: "power_vs_esn_5x"}
PAPER_KEYS_COST = {"esn": "cost_vs_esn", "esn_osub": "cost_vs_esn_osub", "sirius_electrical": "cost_vs_sirius_electrical"}


@dataclass
class ModelResult:
    """Everything ``photonet power`` and ``photonet cost`` show."""

    params: dict
    """The complete model parameters (every default filled in)."""
    architectures: pd.DataFrame
    """One row per architecture: counts, power and cost by component, ratios."""
    power: pd.DataFrame
    """Fig. 6a: one row per tunable-laser power multiplier, with the paper's value where it gives one."""
    cost: pd.DataFrame
    """Fig. 6b: one row per architecture (ESN, ESN-OSUB, electrical Sirius, Sirius), bar and error bar."""
    scale_tax: pd.DataFrame
    """§2 / Fig. 2a: W per Tbps by switch layers."""
    paper: pd.DataFrame
    """The paper's published numbers next to the model's."""
    raw: dict
    """The core's report as parsed JSON."""


def load_params(params: ConfigLike | None = None, overrides: Sequence[str] | Mapping[str, Any] | None = None) -> dict:
    """Model parameters as a dict: a TOML file name, TOML text or dict, with
    ``key=value`` overrides applied (not yet validated; the core does that)."""
    cfg, _ = load(params, overrides)
    return cfg


def power_cost(
    params: ConfigLike | None = None,
    overrides: Sequence[str] | Mapping[str, Any] | None = None,
    *,
    power_multipliers: Optional[Sequence[float]] = None,
    error_multiplier: Optional[float] = None,
) -> ModelResult:
    """Runs the model. Bad parameters raise ConfigError naming the key, the
    value and the reason (prefixed with the file name when there is one)."""
    cfg = load_params(params, overrides)
    try:
        text = _core.power_cost_model(
            to_toml(cfg),
            [float(m) for m in power_multipliers] if power_multipliers is not None else None,
            float(error_multiplier) if error_multiplier is not None else None,
        )
    except _core.ConfigError as e:
        is_file = params is not None and not isinstance(params, Mapping) and "\n" not in os.fspath(params)
        raise ConfigError(f"{os.fspath(params)}: {e}" if is_file else str(e)) from None
    return _frames(json.loads(text))


def _frames(raw: dict) -> ModelResult:
    summ = raw["summary"]
    paper = pd.DataFrame(raw["paper"])
    paper_by_key = dict(zip(paper["key"], paper["paper"]))

    rows = []
    esn = next(a for a in summ["architectures"] if a["id"] == "esn")
    sirius = next(a for a in summ["architectures"] if a["id"] == "sirius")
    for a in summ["architectures"]:
        row = {k: v for k, v in a.items() if k not in ("power_w", "cost_usd", "core_switches_per_level")}
        row["core_switches_per_level"] = "/".join(str(n) for n in a["core_switches_per_level"])
        for part, v in a["power_w"].items():
            row[f"power_{part}_w"] = v
        for part, v in a["cost_usd"].items():
            row[f"cost_{part}_usd"] = v
        row["power_vs_esn"] = a["power_w"]["total"] / esn["power_w"]["total"]
        row["cost_vs_esn"] = a["cost_usd"]["total"] / esn["cost_usd"]["total"]
        row["sirius_power_vs_this"] = sirius["power_w"]["total"] / a["power_w"]["total"]
        row["sirius_cost_vs_this"] = sirius["cost_usd"]["total"] / a["cost_usd"]["total"]
        rows.append(row)
    archs = pd.DataFrame(rows)

    power = pd.DataFrame(raw["fig6a"])
    power["paper_sirius_vs_esn"] = [paper_by_key.get(PAPER_KEYS_POWER.get(float(m), ""), float("nan")) for m in power["tunable_power_multiplier"]]

    cost = pd.DataFrame(raw["fig6b"])
    cost["paper_sirius_vs_this"] = [paper_by_key.get(PAPER_KEYS_COST.get(i, ""), float("nan")) for i in cost["id"]]

    tax = pd.DataFrame(raw["fig2a"])
    tax["paper_w_per_tbps_bisection"] = tax["switch_layers"].map({0: paper_by_key["scale_tax_direct"], 4: paper_by_key["scale_tax_4_layers"]})
    return ModelResult(params=summ["params"], architectures=archs, power=power, cost=cost, scale_tax=tax, paper=paper, raw=raw)


def _fig6a(r: ModelResult, path: Path) -> Path:
    from . import plots

    ours = pd.DataFrame({"x": r.power["tunable_power_multiplier"], "pct": 100 * r.power["sirius_vs_esn"], "series": "this model"})
    pub = r.power.dropna(subset=["paper_sirius_vs_esn"])
    theirs = pd.DataFrame({"x": pub["tunable_power_multiplier"], "pct": 100 * pub["paper_sirius_vs_esn"], "series": "paper (§5)"})
    df = pd.concat([ours, theirs], ignore_index=True)
    return plots.lines(df, "x", "pct", path, hue="series", xlabel="tunable-laser power / fixed-laser power",
                       ylabel="Sirius power / ESN power (%)", title=f"Fig. 6a: Sirius vs non-blocking ESN, {r.params['racks']:,} racks")


def _fig6b(r: ModelResult, path: Path) -> Path:
    from . import plots

    c = r.cost
    df = pd.DataFrame({
        "architecture": c["label"],
        "pct": 100 * c["vs_esn"],
        "lo": 100 * c[["vs_esn", "vs_esn_error"]].min(axis=1),
        "hi": 100 * c[["vs_esn", "vs_esn_error"]].max(axis=1),
    })
    m, em = c["tunable_cost_multiplier"].iloc[0], c["error_multiplier"].iloc[0]
    return plots.bars(df, "architecture", "pct", path, ylabel="cost relative to ESN (%)", errlo="lo", errhi="hi",
                      title=f"Fig. 6b: tunable laser {m:g}x a fixed laser's cost (error bars {em:g}x)")


def _write_common(r: ModelResult, d: Path) -> None:
    r.architectures.to_csv(d / "architectures.csv", index=False)
    r.paper.to_csv(d / "paper.csv", index=False)
    (d / "model.json").write_text(json.dumps(r.raw, indent=2, sort_keys=True) + "\n")


def write_power(r: ModelResult, out: str | os.PathLike) -> Path:
    """Writes ``table.csv`` (Fig. 6a), ``fig6a.png``, ``scale_tax.csv``,
    ``architectures.csv``, ``paper.csv`` and ``model.json`` into ``out``,
    atomically (a temporary directory renamed into place)."""
    from .io import atomic_dir

    def fill(d: Path) -> None:
        r.power.to_csv(d / "table.csv", index=False)
        r.scale_tax.to_csv(d / "scale_tax.csv", index=False)
        _write_common(r, d)
        _fig6a(r, d / "fig6a.png")

    return atomic_dir(out, fill)


def write_cost(r: ModelResult, out: str | os.PathLike) -> Path:
    """Writes ``table.csv`` (Fig. 6b), ``fig6b.png``, ``architectures.csv``,
    ``paper.csv`` and ``model.json`` into ``out``, atomically."""
    from .io import atomic_dir

    def fill(d: Path) -> None:
        r.cost.to_csv(d / "table.csv", index=False)
        _write_common(r, d)
        _fig6b(r, d / "fig6b.png")

    return atomic_dir(out, fill)
