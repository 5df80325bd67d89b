"""Model figures: evaluating a registered analytical model and reading numbers
out of its report by path.

A path is dotted keys, with ``[i]`` for a list index and ``[field=value]`` for
the record of a list whose ``field`` equals ``value``, e.g.
``paper_points.cost_vs_esn`` or ``fig2a[switch_layers=4].w_per_tbps_bisection``.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Optional, Sequence

from .. import _core
from ..config import ConfigError, parse_value, to_toml
from .experiment import Figure, x_equal

_TOKEN = re.compile(r"\[[^\]]*\]|[^.\[\]]+")
_PATH = re.compile(r"[^.\[\]]+(\[[^\]]*\]|\.[^.\[\]]+)*")


@dataclass
class ModelRun:
    """One model figure's evaluation."""

    figure: str
    model: str
    status: str                   # done | skipped: ...
    report: Optional[dict] = None


def model_names() -> list[str]:
    """The analytical models built into this photonet."""
    return [m["name"] for m in _core.models()]


def lookup(report: Any, path: str) -> Any:
    """The value at ``path`` in ``report``; KeyError naming the missing step."""
    if not isinstance(path, str) or not _PATH.fullmatch(path):
        raise KeyError(f"{path!r} is not a path like a.b[2].c or a[field=value].c")
    node, at = report, ""
    for t in _TOKEN.findall(path):
        here = at or "the report"
        if t.startswith("["):
            inner = t[1:-1].strip()
            if not isinstance(node, list):
                raise KeyError(f"{here} is not a list, so it has no {t}")
            if "=" in inner:
                k, v = (s.strip() for s in inner.split("=", 1))
                want = parse_value(v)
                hits = [r for r in node if isinstance(r, dict) and k in r and x_equal(r[k], want)]
                if not hits:
                    have = [r.get(k) for r in node if isinstance(r, dict)]
                    raise KeyError(f"no record of {here} has {k} = {v} (values: {have})")
                node = hits[0]
            else:
                try:
                    node = node[int(inner)]
                except (ValueError, IndexError):
                    raise KeyError(f"{here} has {len(node)} entries; {t} is not one of them") from None
        else:
            if isinstance(node, list) and t.isdigit():
                if int(t) >= len(node):
                    raise KeyError(f"{here} has {len(node)} entries; [{t}] is not one of them")
                node = node[int(t)]
            elif not isinstance(node, dict) or t not in node:
                keys = ", ".join(sorted(node)) if isinstance(node, dict) else f"a {type(node).__name__}"
                raise KeyError(f"no key {t!r} in {here} (it has: {keys})")
            else:
                node = node[t]
        at = f"{at}{t}" if t.startswith("[") or not at else f"{at}.{t}"
    return node


def records(report: dict, path: str, fields: Sequence[str]) -> list[dict]:
    """The list of records at ``path``, each with every one of ``fields``."""
    rows = lookup(report, path)
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise KeyError(f"{path!r} is not a list of records")
    for f in fields:
        if not all(f in r for r in rows):
            have = sorted(rows[0]) if rows else []
            raise KeyError(f"the records at {path!r} have no field {f!r} (they have: {', '.join(have)})")
    return rows


def evaluate_models(figs: list[Figure], *, available: Optional[Sequence[str]] = None) -> dict[str, ModelRun]:
    """Evaluates every model figure (models are fast: no caching). A model this
    photonet does not have is skipped; bad parameters, options, claim paths or
    panel fields are ConfigErrors naming the file, before anything runs."""
    if available is None:
        available = model_names()
    out: dict[str, ModelRun] = {}
    for fig in figs:
        if not fig.is_model:
            continue
        if fig.model not in available:
            out[fig.id] = ModelRun(fig.id, fig.model, f"skipped: model {fig.model} not built")
            continue
        try:
            text = _core.model_report(fig.model, to_toml(fig.params), json.dumps(fig.options))
        except _core.ConfigError as e:
            raise ConfigError(f"{fig.path}: model {fig.model!r}: {e}") from None
        report = json.loads(text)
        where = f"{fig.path}: [reproduce]"
        for c in fig.claims:
            try:
                v = lookup(report, c["value"])
            except KeyError as e:
                raise ConfigError(f"{where} claim {c['what']!r}: `value` = {c['value']!r}: {e.args[0]}") from None
            if not isinstance(v, (int, float)) or isinstance(v, bool):
                raise ConfigError(f"{where} claim {c['what']!r}: `value` = {c['value']!r} is {v!r}, not a number")
        for i, p in enumerate(fig.panels):
            try:
                records(report, p["data"], [p["x"], *p["y"]])
            except KeyError as e:
                raise ConfigError(f"{where} panel #{i + 1} ({p['kind']}): `data` = {p['data']!r}: {e.args[0]}") from None
        out[fig.id] = ModelRun(fig.id, fig.model, "done", report)
    return out
