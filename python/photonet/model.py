"""Analytical models (power, cost, scale) of the Rust core (``photonet::model``),
by name, as pandas DataFrames: ``photonet power|cost <model>``.

The core owns each model, its parameters, defaults and validation, and
reports the model's own numbers only. The numbers a paper published are in
its experiment directory (``experiments/<paper>/``: a figure file whose
``[reproduce]`` says ``model = "<name>"``, with claims that pick model values by
path); :func:`published` puts them next to the model's. How ``power`` and
``cost`` show a model (tables, plots) is its *view*: models without one get a
generic view (every list of records in the report as a table).

    >>> from photonet import model
    >>> r = model.power_cost(overrides=["count_rack_switches=false"])
    >>> r.power[["tunable_power_multiplier", "sirius_vs_esn"]]
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

import pandas as pd

from . import _core
from .config import ConfigError, ConfigLike, load, to_toml, tomllib
from . import model_sirius


def models() -> list[dict]:
    """The registered models: dicts with ``name`` and ``description``."""
    return [dict(m) for m in _core.models()]


def model_names() -> list[str]:
    return [m["name"] for m in models()]


def resolve(name: Optional[str]) -> str:
    """``name``, checked; None means the first registered model."""
    names = model_names()
    if name is None:
        if not names:
            raise ConfigError("no analytical model is built into this photonet")
        return names[0]
    if name not in names:
        raise ConfigError(f"model {name!r} is not known; expected one of {', '.join(names)}")
    return name


@dataclass
class ModelResult:
    """A model's report as DataFrames. ``tables`` are the view's (also
    reachable as attributes: ``r.power``, ``r.cost`` ...)."""

    name: str
    params: dict
    """The complete model parameters (every default filled in)."""
    tables: dict[str, pd.DataFrame]
    paper: pd.DataFrame
    """The paper's published numbers (from the experiment files) next to the model's."""
    raw: dict
    """The core's report as parsed JSON."""
    extra: dict = field(default_factory=dict)

    def __getattr__(self, k: str) -> pd.DataFrame:
        tables = self.__dict__.get("tables", {})
        if k in tables:
            return tables[k]
        raise AttributeError(k)


def load_params(params: ConfigLike | None = None, overrides: Sequence[str] | Mapping[str, Any] | None = None) -> dict:
    """Model parameters as a dict: a TOML file name, TOML text or dict, with
    ``key=value`` overrides applied (not yet validated; the core does that)."""
    cfg, _ = load(params, overrides)
    return cfg


def evaluate(
    name: Optional[str] = None,
    params: ConfigLike | None = None,
    overrides: Sequence[str] | Mapping[str, Any] | None = None,
    options: Optional[Mapping[str, Any]] = None,
) -> dict:
    """The core's report of model ``name`` (default: the first registered).
    Bad parameters or options raise ConfigError naming the key, the value and
    the reason (prefixed with the file name when there is one)."""
    name = resolve(name)
    cfg = load_params(params, overrides)
    try:
        text = _core.model_report(name, to_toml(cfg), json.dumps(dict(options or {})))
    except _core.ConfigError as e:
        is_file = params is not None and not isinstance(params, Mapping) and "\n" not in os.fspath(params)
        # An option's error is not about the parameter file: no file prefix then.
        about_params = not str(e).startswith("`options")
        raise ConfigError(f"{os.fspath(params)}: {e}" if is_file and about_params else str(e)) from None
    return json.loads(text)


PUBLISHED_COLUMNS = ["key", "path", "quantity", "figure", "paper", "paper_text", "model", "unit", "quote", "file"]


def published(name: str, raw: Optional[dict] = None, root: Optional[Path] = None) -> pd.DataFrame:
    """The claims of every experiment file that reproduces model ``name``: the
    report path (``path``; ``key`` is its last step), the paper's number, the
    figure or section it is from, and, given the report ``raw``, the model's
    value there."""
    from .reproduce.experiment import EXPERIMENT_FILE, experiments_root, papers
    from .reproduce.models import lookup

    root = Path(root) if root else experiments_root()
    rows = []
    for paper in papers(root):
        for f in sorted((root / paper).glob("*.toml")):
            if f.name == EXPERIMENT_FILE:
                continue
            try:
                rep = tomllib.loads(f.read_text()).get("reproduce", {})
            except tomllib.TOMLDecodeError:
                continue  # `photonet reproduce` names the broken file; here it only lacks published numbers
            if not isinstance(rep, dict) or rep.get("model") != name:
                continue
            for c in rep.get("claims", []):
                if not isinstance(c, dict) or not isinstance(c.get("value"), str):
                    continue
                try:
                    ours = float(lookup(raw, c["value"])) if raw is not None else float("nan")
                except (KeyError, TypeError, ValueError):
                    ours = float("nan")
                rows.append({
                    "key": c["value"].rsplit(".", 1)[-1],
                    "path": c["value"],
                    "quantity": c.get("what", ""),
                    "figure": c.get("figure", f.stem.split("_", 1)[0]),
                    "paper": float(c["paper"]) if isinstance(c.get("paper"), (int, float)) else float("nan"),
                    "paper_text": c.get("paper_text", ""),
                    "model": ours,
                    "unit": c.get("unit", ""),
                    "quote": c.get("quote", ""),
                    "file": str(f.relative_to(root)),
                })
    return pd.DataFrame(rows, columns=PUBLISHED_COLUMNS)


# --------------------------------------------------------------------------- views

class GenericView:
    """How ``power``/``cost`` show a model that has no view of its own: every
    list of records in the report is a table (CSV), nothing is plotted."""

    def tables(self, raw: dict, paper: pd.DataFrame) -> dict[str, pd.DataFrame]:
        return {k: pd.DataFrame(v) for k, v in raw.items() if isinstance(v, list) and v and all(isinstance(r, dict) for r in v)}

    def write(self, what: str, r: ModelResult, d: Path) -> list[str]:
        names = []
        for k, t in r.tables.items():
            t.to_csv(d / f"{k}.csv", index=False)
            names.append(f"{k}.csv")
        return names

    def show(self, what: str, r: ModelResult, out_console) -> None:
        from rich.table import Table

        for k, t in r.tables.items():
            tt = Table(title=f"{r.name}: {k}")
            for c in t.columns:
                tt.add_column(str(c), justify="right")
            for _, row in t.iterrows():
                tt.add_row(*(_cell(v) for v in row))
            out_console.print(tt)
        show_paper(r, out_console)


def _cell(v: Any) -> str:
    if isinstance(v, float):
        return "-" if v != v else f"{v:.4g}"
    return str(v)


def show_paper(r: ModelResult, out_console) -> None:
    """The published numbers next to the model's, if any experiment has them."""
    from rich.table import Table

    if r.paper.empty:
        return
    t = Table(title=f"{r.name}: the paper's numbers next to the model's")
    for c in ("figure", "quantity", "model", "paper", "unit"):
        t.add_column(c, justify="right" if c in ("model", "paper") else "left")
    for _, x in r.paper.iterrows():
        t.add_row(x["figure"], x["quantity"], _cell(x["model"]), _cell(x["paper"]) if x["paper"] == x["paper"] else (x["paper_text"] or "-"), x["unit"])
    out_console.print(t)


# How `power` and `cost` show a model with its own tables and figures, by
# model name; every other model gets the generic view.
VIEWS = {"sirius": model_sirius.VIEW}


def view(name: str):
    """The view of model ``name`` (registered in :data:`VIEWS`), else the
    generic view."""
    return VIEWS.get(name) or GenericView()


def power_cost(
    params: ConfigLike | None = None,
    overrides: Sequence[str] | Mapping[str, Any] | None = None,
    *,
    model: Optional[str] = None,
    options: Optional[Mapping[str, Any]] = None,
    power_multipliers: Optional[Sequence[float]] = None,
    error_multiplier: Optional[float] = None,
) -> ModelResult:
    """Runs model ``model`` (default: the first registered) and returns its
    view's tables. ``power_multipliers`` / ``error_multiplier`` are shorthands
    for those options (models that sweep a tunable-laser multiplier)."""
    name = resolve(model)
    opts = dict(options or {})
    if power_multipliers is not None:
        opts["power_multipliers"] = [float(m) for m in power_multipliers]
    if error_multiplier is not None:
        opts["error_multiplier"] = float(error_multiplier)
    raw = evaluate(name, params, overrides, opts)
    paper = published(name, raw)
    return ModelResult(name, raw.get("params", {}), view(name).tables(raw, paper), paper, raw)


def write(what: str, r: ModelResult, out: str | os.PathLike) -> tuple[Path, list[str]]:
    """Writes the view's ``what`` (``power`` or ``cost``) files, ``paper.csv``
    and ``model.json`` into ``out``, atomically (a temporary directory renamed
    into place). Returns (the directory, the file names)."""
    from .io import atomic_dir, model_foreign

    names: list[str] = []

    def fill(d: Path) -> None:
        names.extend(view(r.name).write(what, r, d))
        r.paper.to_csv(d / "paper.csv", index=False)
        (d / "model.json").write_text(json.dumps(r.raw, indent=2, sort_keys=True) + "\n")
        names.extend(["paper.csv", "model.json"])

    return atomic_dir(out, fill, model_foreign), names


def check_out(out: str | os.PathLike) -> None:
    """Raises OutputError unless ``out`` may be written by :func:`write` (new,
    empty, or a folder a model wrote before)."""
    from .io import check_result_dir, model_foreign

    check_result_dir(out, "--out", model_foreign)


def write_power(r: ModelResult, out: str | os.PathLike) -> Path:
    return write("power", r, out)[0]


def write_cost(r: ModelResult, out: str | os.PathLike) -> Path:
    return write("cost", r, out)[0]
