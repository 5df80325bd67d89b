"""``report.md``: the paper's numbers next to ours, then each figure (plot,
our values as tables, what the paper says), the setup and the files. The
prose that belongs to a paper comes from its experiment.toml ``[report]``."""
from __future__ import annotations

import datetime as _dt
import json
import math
from pathlib import Path
from typing import Any, Optional, Sequence

import pandas as pd

from ..config import _deepcopy, apply_overrides
from ..io import atomic_write_text
from .experiment import Figure, Metric, Paper, fmt_x, is_num, x_equal
from .models import ModelRun, records
from .numbers import OK, at_x, class_fcts, flows_of, parse_class, scorecard


def fmt(v: Any, digits: int = 3) -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "–"
    if isinstance(v, float):
        return f"{v:.{digits}g}" if abs(v) < 1e5 else f"{v:,.0f}"
    return str(v)


def paper_value(r) -> str:
    """The paper's number, else its words, else –."""
    return fmt(r["paper"]) if math.isfinite(r["paper"]) else (r["paper_text"] or "–")


def md_table(header: list[str], rows: list[list[str]]) -> str:
    esc = lambda s: str(s).replace("|", "\\|").replace("\n", " ")  # noqa: E731
    lines = ["| " + " | ".join(esc(h) for h in header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(esc(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


def setup_rows(paper: Paper, figs: list[Figure], scale: str, overrides: Sequence[str]) -> list[list[str]]:
    """The experiment's ``setup_keys``: their value at full scale and in this run."""
    sims = [f for f in figs if not f.is_model]
    if not sims:
        return []

    def eff(sc: str) -> dict:
        cfg = _deepcopy(sims[0].base)
        apply_overrides(cfg, paper.reading["set"])
        apply_overrides(cfg, paper.scales[sc]["set"])
        if sc == scale:
            apply_overrides(cfg, list(overrides))
        return cfg

    full, ours = eff("full"), eff(scale)

    def get(cfg, dotted):
        node: Any = cfg
        for p in dotted.split("."):
            if not isinstance(node, dict) or p not in node:
                return "default"
            node = node[p]
        return json.dumps(node) if isinstance(node, (dict, list)) else str(node)

    return [[k, get(full, k), get(ours, k)] for k in paper.report["setup_keys"]]


def _xcell(fig: Figure, x: Any) -> str:
    return f"{x * 100:g}" if fig.x_percent and is_num(x) else fmt_x(x)


def _metric_table(fig: Figure, g: pd.DataFrame, m: Metric, xs: list) -> str:
    header = [fig.xlabel] + [s.label for s in fig.series]
    trows = []
    for x in xs:
        cells = [_xcell(fig, x)]
        for s in fig.series:
            r = g[(g["series"] == s.label) & g["x"].map(lambda v, x=x: x_equal(v, x))]
            if not len(r):
                cells.append("–")
                continue
            r = r.iloc[0]
            cells.append(fmt(r[m.name], 4) if r["status"] in OK else r["status"].split(":")[0])
        trows.append(cells)
    return md_table(header, trows)


def _cdf_table(fig: Figure, df: pd.DataFrame, panel: dict, out: Path) -> str:
    cls = panel.get("class", "all")
    lo, hi = parse_class("cdf panel", cls)
    x = panel.get("at", fig.xs[0])
    rows = []
    for s in fig.series:
        r = at_x(df, fig, s.label, x)
        if r is None or r["status"] not in OK:
            rows.append([s.label, "–", "–", "–", "–" if r is None else r["status"].split(":")[0]])
            continue
        flows = flows_of(out, r["key"])
        if flows is None:
            rows.append([s.label, "–", "–", "–", "no flows.csv"])
            continue
        fct, unfinished = class_fcts(flows, lo, hi)
        q = (lambda p: fmt(float(fct.quantile(p)), 4)) if len(fct) else (lambda p: "–")
        rows.append([s.label, f"{len(fct):,}", q(0.5), q(0.99), f"{unfinished:,} unfinished" if unfinished else ""])
    return md_table(["series", f"finished flows {cls}", "median FCT (µs)", "p99 FCT (µs)", "note"], rows)


def _model_table(panel: dict, run: ModelRun) -> str:
    rows = records(run.report, panel["data"], [panel["x"], *panel["y"]])
    return md_table([panel["x"], *panel["y"]], [[fmt(r[panel["x"]], 4), *(fmt(r[y], 4) for y in panel["y"])] for r in rows])


def scorecard_md(nums: pd.DataFrame, scale: str) -> str:
    """The scorecard a reader sees first: each verdict's count, sanity lines apart."""
    card = scorecard(nums)
    keys = ["reproduced", "explained gap", "unexplained gap", "not attempted", "sanity lines (apart)"]
    L = ["## Scorecard\n", md_table(keys, [[str(card[k]) for k in keys]]), "",
         f"{card['claims (counted)']} claims of the paper, checked at the **{scale}** scale: a number within its stated tolerance, "
         "ours inside a range the paper states, or the direction the paper's quoted words state (the `check` column of "
         "`numbers.csv`). An explained gap names the measurement that accounts for it (`gap:` in the note). Sanity lines "
         "check what the inputs guarantee (arithmetic, an ordering the parameters fix) and never count as reproducing the paper"
         + (f"; {card['sanity failed']} of them FAIL" if card["sanity failed"] else "") + "."]
    if scale != "full":
        L.append(" Claims flagged scale-sensitive compare an absolute value at a smaller scale than the paper's: "
                 "`--full` decides them.")
    return "\n".join(L) + "\n"


def write_report(
    out: Path,
    paper: Paper,
    figs: list[Figure],
    df: pd.DataFrame,
    nums: pd.DataFrame,
    *,
    scale: str,
    overrides: Sequence[str],
    info: dict,
    wall_s: float,
    models: Optional[dict[str, ModelRun]] = None,
    sensitivity: Optional[pd.DataFrame] = None,
) -> Path:
    from ..provenance import build_info, describe_build

    models = models or {}
    rep = paper.report
    about = paper.scales[scale]["about"]
    now = _dt.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    L: list[str] = []
    L.append(f"# Reproduction report: {paper.name}\n")
    if paper.title and paper.title != paper.name:
        L.append(f"{paper.title}.  ")
    L.append(f"Scale **{scale}**: {about}.  ")
    if paper.reading["set"] or paper.reading["about"]:
        sets = " ".join(f"`{k}={v}`" for k, v in paper.reading["set"].items())
        L.append(f"Reading (every figure): {sets}{' — ' if sets else ''}{paper.reading['about'].strip()}  ")
    if overrides:
        L.append(f"Overrides: `{' '.join(overrides)}`.  ")
    L.append(f"Generated {now} by {describe_build(build_info())} from `{paper.dir}`.  ")
    uniq = df[df["key"] != ""].drop_duplicates("key")
    sim_wall = pd.to_numeric(uniq["wall_s"], errors="coerce").sum()
    L.append(f"This invocation: {info['ran']} points run, {info['cached']} cached, {info['skipped']} skipped, "
             f"{info['failed']} failed, {info['pending']} pending; {wall_s:.1f} s wall "
             f"(simulation wall time of all finished points: {sim_wall:.1f} s).\n")
    L.append(scorecard_md(nums, scale))
    if rep["intro"]:
        L.append(rep["intro"].strip() + "\n")
    skipped = df[df["status"].str.startswith("skipped")]
    not_run = [f"{r} ({c} points)" for r, c in skipped["status"].value_counts().items()]
    not_run += [f"{m.status} ({m.figure})" for m in models.values() if m.report is None]
    if not_run:
        L.append("**Not run:** " + "; ".join(not_run)
                 + ". Rerun the same command once they can run: finished points are kept and only the missing ones run.\n")
    failed = df[df["status"].str.startswith("failed")]
    if len(failed):
        L.append("**Failed points:**\n")
        for _, r in failed.drop_duplicates("key").iterrows():
            L.append(f"- {r['figure']} {r['series']} x={fmt_x(r['x'])}: {r['status']}")
        L.append("")

    L.append("## The paper's numbers next to ours\n")
    L.append("`ours/paper` and `ours − paper` only where the paper states a number; "
             "`–` where we have no value (see the note)." + (f" {rep['quotes'].strip()}" if rep["quotes"] else "") + "\n")
    rows = []
    for _, r in nums.iterrows():
        rows.append([r["figure"], r["quantity"], fmt(r["ours"], 4), paper_value(r), fmt(r["ratio"]), fmt(r["difference"]), r["unit"],
                     r["check"], r["verdict"], r["note"]])
    L.append(md_table(["figure", "quantity", "ours", "paper", "ours/paper", "ours − paper", "unit", "check", "verdict", "note"], rows))
    L.append("")
    if sensitivity is not None and len(sensitivity):
        alts = paper.reading["alternatives"]
        L.append("## Sensitivity to the reading\n")
        L.append("The claims of the simulated figures under this reading and under each alternative (every other key as above): "
                 + "; ".join(f"**{a['name']}**: " + ", ".join([f"`{k}={v}`" for k, v in a["set"].items()]
                                                               + [f"claims on `{v}` instead of `{k}`" for k, v in a["metrics"].items()])
                             for a in alts) + ". `sensitivity.csv` holds the same table.\n")
        cols = list(sensitivity.columns)
        srows = [[r["figure"], r["quantity"], r["paper"] if isinstance(r["paper"], str) else fmt(r["paper"], 4)]
                 + [fmt(r[c], 4) for c in cols[3:]] for _, r in sensitivity.iterrows()]
        L.append(md_table(cols, srows))
        L.append("")

    for fig in figs:
        L.append(f"## {fig.title}\n")
        L.append(f"![{fig.id}]({fig.id}.png)\n")
        if fig.is_model:
            run = models.get(fig.id)
            L.append(f"Model `{fig.model}`, parameters and options from `{fig.path.name}`"
                     + (f"; report in `{fig.id}.json`. " if run and run.report is not None else ". ")
                     + (fig.notes + " " if fig.notes else ""))
            for panel in fig.panels:
                L.append(f"\n**{panel.get('title', panel['data'])}**\n")
                L.append(_model_table(panel, run) if run and run.report is not None else f"– ({run.status if run else 'not evaluated'})")
        else:
            g = df[df["figure"] == fig.id]
            L.append(f"Config: `{fig.path.name}`. " + (fig.notes + " " if fig.notes else ""))
            for panel in fig.panels:
                kind = panel["kind"]
                if kind in ("line", "bar"):
                    m = paper.metrics[panel["metric"]]
                    L.append(f"\n**{panel.get('title', m.name)}**: {m.label}\n")
                    L.append(_metric_table(fig, g, m, [panel["at"]] if "at" in panel else fig.xs))
                elif kind == "cdf":
                    x = panel.get("at", fig.xs[0])
                    L.append(f"\n**{panel.get('title', 'FCT CDF')}**: per-flow FCT at {fig.xlabel} = {_xcell(fig, x)}\n")
                    L.append(_cdf_table(fig, df, panel, out))
                else:
                    x = panel.get("at", fig.xs[0])
                    L.append(f"\n**{panel.get('title', 'goodput over time')}**: goodput over time at {fig.xlabel} = "
                             f"{_xcell(fig, x)} (each point's `series.csv`)\n")
        claims = nums[nums["file"] == fig.id]
        if len(claims):
            L.append("\nWhat the paper says:\n")
            for _, r in claims.iterrows():
                q = f" — “{r['paper_quote']}”" if r["paper_quote"] else ""
                src = f" ({r['figure']})" if r["figure"] != fig.id else ""
                L.append(f"- {r['quantity']}{src}: ours {fmt(r['ours'])}, paper {paper_value(r)}{q}")
        L.append("")

    setup = setup_rows(paper, figs, scale, overrides)
    if setup or rep["common"]:
        L.append("## Setup\n")
    if setup:
        L.append(md_table(["key", "paper (full)", f"this run ({scale})"], setup))
    if rep["common"]:
        L.append(f"\nCommon to every point: {rep['common'].strip()}\n")
    L.append("## Files\n")
    L.append("- `numbers.csv`: the table above (ours, paper, ratio, difference, note, quote)")
    L.append("- `points.csv`: every (figure, series, x): status, metrics, results key")
    L.append("- `report.html`: this report in one file with its figures embedded (open it in a browser)")
    L.append("- `<figure>.png`: the figures (filled star: the paper's value, where it states one; hollow markers: more than 5 % of "
             "the point's flows unfinished); `points/<key>/`: each run's summary.json, manifest.json, config.toml and, "
             "where a figure reads them (or `--flows`), its per-flow records flows.parquet")
    if any(f.is_model for f in figs):
        L.append("- `<figure>.json`: a model figure's report (the model's numbers the claims pick from)")
    L.append(f"- rerun: `photonet reproduce {paper.name}{' --full' if scale == 'full' else ''} --out {out}` (finished points are skipped)")
    text = "\n".join(L) + "\n"
    atomic_write_text(out / "report.md", text)
    from .. import html

    atomic_write_text(out / "report.html", html.page(f"Reproduction report: {paper.name}", html.from_markdown(text, out)))
    return out / "report.md"
