"""Our numbers: metrics of each point (points.csv) and each claim's value next
to the paper's (numbers.csv)."""
from __future__ import annotations

import math
from decimal import ROUND_HALF_EVEN, Decimal
from pathlib import Path
from typing import Any, Iterable, Optional, Sequence

import pandas as pd

from ..config import ConfigError
from .experiment import Figure, Metric, Reference, claim_reads, is_num, parse_class, parse_expect, parse_size, x_equal  # noqa: F401 (re-exported)
from .models import ModelRun, lookup
from .points import FigPoint, manifest_of, summary_of

OK = ("done", "cached")
POINT_COLUMNS = ["figure", "series", "fabric", "x", "status", "key"]
RUN_COLUMNS = ["completed", "flows", "sim_time_us", "wall_s"]
NUMBERS_COLUMNS = ["figure", "quantity", "unit", "ours", "paper", "ratio", "difference", "paper_text", "note", "paper_quote",
                   "check", "verdict"]
# A claim's verdict (the scorecard's rows). "sanity ok" / "sanity failed" are
# counted apart: they check the inputs, not the paper.
VERDICTS = ("reproduced", "explained gap", "unexplained gap", "not attempted")

def _scaled(v: float, scale: float) -> float:
    # Divide by 1000 rather than multiply by 0.001 (not exact in binary) when
    # the scale is the reciprocal of a whole number, so "bytes -> KB" gives
    # the correctly rounded quotient.
    if scale != 1.0:
        r = 1.0 / scale
        if abs(r) > 1 and abs(r - round(r)) <= 1e-9 * abs(r):
            return v / round(r)
        return v * scale
    return v


def metric_value(summary: dict, m: Metric) -> float:
    """One metric from one summary.json; NaN when the summary lacks it. A
    fabric statistic given per node (a list) counts its maximum; a metric
    of one `stream` reads that stream's part of the summary."""
    if m.stream is not None and "streams" in summary:
        streams = summary["streams"]
        summary = streams[m.stream] if m.stream < len(streams) else {}
    elif m.stream:          # a single-stream run is its own stream 0 only
        summary = {}
    if m.source == "fct":
        st = summary.get("fct", {}).get(m.fct_class, {})
        v = st.get(m.key if m.key in ("count", "unfinished") else f"{m.key}_us")
    elif m.source == "summary":
        v = summary.get(m.key)
    else:
        v = summary.get("fabric_stats", {}).get(m.key)
        if isinstance(v, (list, tuple)):
            v = max(v) if v else None
    if v is None or not is_num(v):
        return float("nan")
    return _scaled(float(v), m.scale)


def share_within(out: Path, key: str, m: Metric) -> float:
    """The share of a class's flows (flows.csv) finished within ``m.within_us``;
    unfinished flows count as not within. NaN without flows.csv or flows."""
    flows = flows_of(out, key)
    if flows is None:
        return float("nan")
    lo, hi = parse_class(m.name, m.fct_class)
    g = flows[(flows["bytes"] >= lo) & (flows["bytes"] < hi)]
    if not len(g):
        return float("nan")
    return _scaled(float((g["fct_us"].notna() & (g["fct_us"] <= m.within_us)).sum()) / len(g), m.scale)


def start_ps(start_us: str, offset_us: float | str = 0) -> int:
    """A start time written in µs (as a simulator prints it), less
    ``offset_us``, in whole picoseconds: computed in decimal from the text,
    rounded half to even, so that no binary rounding moves a start by 1 ps."""
    ps = (Decimal(str(start_us).strip()) - Decimal(str(offset_us))) * 1_000_000
    return int(ps.quantize(Decimal(1), rounding=ROUND_HALF_EVEN))


def reference_flows(ref: Reference) -> pd.DataFrame:
    """A reference's flows: its CSV with ``start_ps``, the start on the run's
    clock (its ``start_offset_us`` taken off) in whole picoseconds."""
    d = pd.read_csv(ref.flows, dtype={"start_us": str})
    d["start_ps"] = [start_ps(v, ref.start_offset_us) for v in d["start_us"]]
    return d


def match_reference(flows: pd.DataFrame, ref: Reference) -> pd.DataFrame:
    """Our flows joined with the reference's on (src, dst, bytes, start to
    the picosecond): columns ``bytes``, ``fct_us`` (ours) and ``fct_ref_us``."""
    ours = flows[["src", "dst", "bytes", "start_us", "fct_us"]].copy()
    ours["start_ps"] = (ours["start_us"] * 1e6).round().astype("int64")
    theirs = reference_flows(ref)[["src", "dst", "bytes", "start_ps", "fct_us"]].rename(columns={"fct_us": "fct_ref_us"})
    return ours.drop(columns="start_us").merge(theirs, on=["src", "dst", "bytes", "start_ps"], how="inner")


def matched_flows(out: Path, key: str, reference: Optional[Reference]) -> Optional[pd.DataFrame]:
    """Our flows.csv joined with ``reference`` (:func:`match_reference`);
    None without either."""
    flows = flows_of(out, key)
    if flows is None or reference is None:
        return None
    return match_reference(flows, reference)


def vs_reference(out: Path, key: str, reference: Optional[Reference], m: Metric) -> float:
    """A per-flow comparison with the reference (see REFERENCE_STATS); NaN
    when no flow of the reference matches one of ours."""
    j = matched_flows(out, key, reference)
    if j is None:
        return float("nan")
    j = j.dropna(subset=["fct_us", "fct_ref_us"])
    if not len(j):
        return float("nan")
    err = (j["fct_us"] / j["fct_ref_us"] - 1.0).abs()
    v = {"max_rel_err": err.max(), "mean_rel_err": err.mean(), "p99_rel_err": err.quantile(0.99, interpolation="higher")}[m.key]
    return _scaled(float(v), m.scale)


def metrics_of(summary: dict, metrics: dict[str, Metric]) -> dict:
    """Every declared metric of one summary.json."""
    return {name: metric_value(summary, m) for name, m in metrics.items()}


def short(metrics: dict[str, Metric]):
    """``summary -> "fct 44.5 µs, goodput 0.034"``: the first two metrics, for progress lines."""
    first = list(metrics.values())[:2]

    def f(summary: dict) -> str:
        parts = []
        for m in first:
            v = metric_value(summary, m)
            if v != v:  # NaN: the point has none of what the metric measures (e.g. no mice)
                parts.append(f"{m.name} – (none in this point)")
            else:
                parts.append(f"{m.name} {v:.4g}" + (f" {m.unit}" if m.unit else ""))
        return ", ".join(parts)

    return f


def table(out: Path, fps: list[FigPoint], metrics: dict[str, Metric]) -> pd.DataFrame:
    """One row per (figure, series, x): status and metrics (NaN if not run)."""
    rows = []
    for fp in fps:
        row: dict[str, Any] = {"figure": fp.figure, "series": fp.series, "fabric": fp.fabric, "x": fp.x, "status": fp.status, "key": fp.key or ""}
        if fp.status in OK:
            s = summary_of(out, fp.key)
            row.update(metrics_of(s, metrics))
            for m in metrics.values():
                if m.within_us is not None:
                    row[m.name] = share_within(out, fp.key, m)
                if m.source == "reference":
                    row[m.name] = vs_reference(out, fp.key, fp.reference, m)
            row.update(completed=s.get("completed"), flows=s.get("flows"), sim_time_us=s.get("sim_time_us"),
                       wall_s=manifest_of(out, fp.key).get("wall_s"))
        rows.append(row)
    df = pd.DataFrame(rows, columns=POINT_COLUMNS + list(metrics) + RUN_COLUMNS)
    for c in ("completed", "flows"):
        df[c] = df[c].astype("Int64")
    return df


def missing_reasons(df: pd.DataFrame, labels: Iterable[str], metric: Metric) -> dict[str, list[str]]:
    """Why series have no value of ``metric``: {reason: [series labels]}."""
    out: dict[str, list[str]] = {}
    for lab in labels:
        g = df[df["series"] == lab]
        bad = [s for s in g["status"] if s not in OK]
        if bad:
            why = bad[0]
        elif g[metric.name].isna().all():
            why = f"no {metric.describe()}"
        else:
            continue
        out.setdefault(why, []).append(lab)
    return out


def why_missing(df: pd.DataFrame, labels: Iterable[str], metric: Metric) -> str:
    r = missing_reasons(df, labels, metric)
    return "; ".join(why if why.startswith(("skipped", "pending")) else f"{', '.join(labs)}: {why}" for why, labs in r.items()) or "no data"


def evaluate_claim(df: pd.DataFrame, c: dict, metric: Optional[Metric] = None) -> tuple[float, str]:
    """Our value of a simulated figure's claim, from that figure's rows; (NaN,
    reason) if it cannot be computed."""
    name, kind = c["metric"], c["kind"]
    metric = metric or Metric(name, "summary", name)

    def val(label: str, x: Any) -> float:
        g = df[(df["series"] == label) & df["x"].map(lambda v: x_equal(v, x)) & df["status"].isin(OK)]
        return float(g[name].iloc[0]) if len(g) else float("nan")

    def combine(a: float, b: float) -> float:
        if kind == "value":
            return a
        r = a / b if b not in (0, 0.0) else float("nan")
        return 1 - r if kind == "reduction" else r

    labels = [c["a"]] + ([c["b"]] if kind != "value" else [])
    if "a_at" in c:
        v = combine(val(c["a"], c["a_at"]), val(c["b"], c["b_at"]) if kind != "value" else float("nan"))
    else:
        at = c.get("at", "max")
        # The x values of the claim's own series (every x of the figure, as
        # every series has every x), in their order, so that a table of only
        # the points claim_reads names gives the same value, geomean too.
        cand = list(dict.fromkeys(df.loc[df["series"].isin(labels), "x"])) if at in ("max", "min", "geomean") else [at]
        vals = [combine(val(c["a"], x), val(c["b"], x) if kind != "value" else float("nan")) for x in cand]
        if at == "geomean":  # over every x value: all of them or no value
            v = math.exp(sum(math.log(x) for x in vals) / len(vals)) if all(math.isfinite(x) and x > 0 for x in vals) else float("nan")
        else:
            vals = [x for x in vals if math.isfinite(x)]
            v = (max(vals) if at == "max" else min(vals)) if vals else float("nan")
    if math.isfinite(v):
        return v, ""
    return float("nan"), why_missing(df, labels, metric)


def _expect_ok(c: dict, ours: float) -> bool:
    op, thr = parse_expect("", c["expect"])
    if abs(ours - thr) <= 0.01 * max(abs(thr), 1e-12):
        return False  # no clear effect
    return ours > thr if op == ">" else ours < thr


def check_text(c: dict) -> str:
    """What the claim checks, in words (numbers.csv's `check`)."""
    chk = c.get("check", "")
    if chk == "number":
        return f"within ±{c['tolerance'] * 100:g} % of {c['paper']:g}"
    if chk == "range":
        return f"in the paper's range [{c['range'][0]:g}, {c['range'][1]:g}]"
    if chk == "words":
        return f"{c['expect']} (the paper's words)"
    if chk == "sanity":
        return f"sanity: {c['expect']} (follows from the inputs)"
    return ""


def verdict(c: dict, ours: float) -> str:
    """The claim's verdict: one of VERDICTS, or "sanity ok"/"sanity failed"."""
    chk = c.get("check", "")
    if chk == "sanity":
        return "sanity ok" if math.isfinite(ours) and _expect_ok(c, ours) else "sanity failed"
    if not math.isfinite(ours):
        return "not attempted"
    if chk == "number":
        p = c["paper"]
        ok = abs(ours - p) <= c["tolerance"] * abs(p) if p else abs(ours) <= c["tolerance"]
    elif chk == "range":
        ok = c["range"][0] <= ours <= c["range"][1]
    elif chk == "words":
        ok = _expect_ok(c, ours)
    else:
        return "unexplained gap"
    if ok:
        return "reproduced"
    return "explained gap" if c.get("gap") else "unexplained gap"


def _expect_note(c: dict, ours: float) -> Optional[str]:
    if "expect" not in c or not math.isfinite(ours):
        return None
    op, thr = parse_expect("", c["expect"])
    if abs(ours - thr) <= 0.01 * max(abs(thr), 1e-12):
        return f"no clear effect: within 1% of {thr:g} (paper: {c['expect']})"
    ok = ours > thr if op == ">" else ours < thr
    if c.get("check") == "sanity":
        return f"sanity line ({c['expect']}: {'holds' if ok else 'FAILS'}; follows from the inputs, not a reproduction)"
    return f"{'as the paper says' if ok else 'unlike the paper'} ({c['expect']})"


def _row(fig: Figure, c: dict, ours: float, unit: str, notes: list[str]) -> dict:
    paper = c.get("paper")
    if c.get("gap") and verdict(c, ours) == "explained gap":
        notes = notes + [f"gap: {c['gap']}"]
    have = paper is not None and math.isfinite(ours)
    return {
        "figure": c.get("figure", fig.id),
        "quantity": c["what"],
        "unit": unit,
        "ours": ours,
        "paper": paper if paper is not None else float("nan"),
        "ratio": ours / paper if have and paper else float("nan"),
        "difference": ours - paper if have else float("nan"),
        "paper_text": c.get("paper_text", ""),
        "note": "; ".join(notes),
        "paper_quote": c.get("quote", ""),
        "check": check_text(c),
        "verdict": verdict(c, ours),
        "file": fig.id,
    }


def numbers(
    figs: list[Figure],
    df: pd.DataFrame,
    scale: str,
    scale_about: str,
    *,
    metrics: Optional[dict[str, Metric]] = None,
    models: Optional[dict[str, ModelRun]] = None,
) -> pd.DataFrame:
    """One row per claim: our value, the paper's, ours/paper, ours − paper, a
    note. Columns: NUMBERS_COLUMNS, then ``file`` (the figure file's id, which
    ``figure`` repeats unless a claim names its own source)."""
    metrics = metrics or {}
    models = models or {}
    rows = []
    for fig in figs:
        if fig.is_model:
            run = models.get(fig.id)
            for c in fig.claims:
                notes = []
                if run is None or run.report is None:
                    ours = float("nan")
                    notes.append(run.status if run else "not evaluated")
                else:
                    ours = float(lookup(run.report, c["value"]))
                e = _expect_note(c, ours)
                if e:
                    notes.append(e)
                if c.get("note"):
                    notes.append(c["note"])
                rows.append(_row(fig, c, ours, c.get("unit", ""), notes))
            continue
        g = df[df["figure"] == fig.id]
        for c in fig.claims:
            m = metrics.get(c["metric"])
            ours, why = evaluate_claim(g, c, m)
            notes = [why] if why else []
            e = _expect_note(c, ours)
            if e:
                notes.append(e)
            if c.get("scale_sensitive") and scale != "full":
                notes.append(f"{scale} scale ({scale_about.split(',')[0]}): absolute value not comparable with the paper's")
            if c.get("note"):
                notes.append(c["note"])
            default_unit = {"ratio": "x", "reduction": "fraction"}.get(c["kind"], m.unit if m else "")
            rows.append(_row(fig, c, ours, c.get("unit", default_unit), notes))
    return pd.DataFrame(rows, columns=NUMBERS_COLUMNS + ["file"])


def scorecard(nums: pd.DataFrame) -> dict[str, int]:
    """Counts of each verdict; sanity lines apart (they do not reproduce the paper)."""
    v = list(nums["verdict"]) if "verdict" in nums else []
    card = {k: v.count(k) for k in VERDICTS}
    card["claims (counted)"] = sum(card.values())
    card["sanity lines (apart)"] = sum(1 for x in v if str(x).startswith("sanity"))
    card["sanity failed"] = v.count("sanity failed")
    return card


# --------------------------------------------------------------------------- per-flow data

def flows_of(out: Path, key: str) -> Optional[pd.DataFrame]:
    """A point's per-flow records: its flows.parquet, else the flows.csv of a
    point written before reproductions wrote Parquet; None without either."""
    d = out / "points" / key
    if (d / "flows.parquet").exists():
        return pd.read_parquet(d / "flows.parquet")
    return pd.read_csv(d / "flows.csv") if (d / "flows.csv").exists() else None


def series_of(out: Path, key: str) -> Optional[pd.DataFrame]:
    p = out / "points" / key / "series.csv"
    return pd.read_csv(p) if p.exists() else None


def class_fcts(flows: pd.DataFrame, lo: float, hi: float) -> tuple[pd.Series, int]:
    """FCTs (µs) of the finished flows with lo <= bytes < hi, sorted, and how
    many flows of the class did not finish (censored: they are not in the CDF)."""
    g = flows[(flows["bytes"] >= lo) & (flows["bytes"] < hi)]
    done = g["fct_us"].dropna().sort_values().reset_index(drop=True)
    return done, len(g) - len(done)


def at_x(df: pd.DataFrame, fig: Figure, label: str, x: Any) -> Optional[pd.Series]:
    """The points.csv row of (series, x) in ``fig``, if any."""
    g = df[(df["figure"] == fig.id) & (df["series"] == label) & df["x"].map(lambda v: x_equal(v, x))]
    return g.iloc[0] if len(g) else None

