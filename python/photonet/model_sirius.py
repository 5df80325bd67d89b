"""How ``photonet power sirius`` and ``photonet cost sirius`` show the Sirius §5
model: architecture tables, Fig. 6a (power vs the tunable-laser multiplier),
Fig. 6b (cost bars with error bars) and §2's scale tax (Fig. 2a), each with
the paper's number where it publishes one (from ``experiments/sirius/``)."""
from __future__ import annotations

from pathlib import Path

import pandas as pd
from rich.table import Table

# `ModelResult` below is `photonet.model.ModelResult`, named in annotations
# only (never evaluated): `model` imports this module to register its view.

# Report paths of the published numbers each table row is compared with.
_POWER = {3.0: "paper_points.power_vs_esn_3x", 5.0: "paper_points.power_vs_esn_5x"}
_COST = {"esn": "paper_points.cost_vs_esn", "esn_osub": "paper_points.cost_vs_esn_osub",
         "sirius_electrical": "paper_points.cost_vs_sirius_electrical"}
_TAX = {0: "paper_points.scale_tax_direct", 4: "paper_points.scale_tax_4_layers"}


def _pct(x) -> str:
    return "-" if x is None or x != x else f"{100 * x:.1f} %"


class SiriusView:
    def tables(self, raw: dict, paper: pd.DataFrame) -> dict[str, pd.DataFrame]:
        by_path = dict(zip(paper["path"], paper["paper"]))
        summ = raw["summary"]
        esn = next(a for a in summ["architectures"] if a["id"] == "esn")
        sirius = next(a for a in summ["architectures"] if a["id"] == "sirius")
        rows = []
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
        nan = float("nan")
        power = pd.DataFrame(raw["fig6a"])
        power["paper_sirius_vs_esn"] = [by_path.get(_POWER.get(float(m), ""), nan) for m in power["tunable_power_multiplier"]]
        cost = pd.DataFrame(raw["fig6b"])
        cost["paper_sirius_vs_this"] = [by_path.get(_COST.get(i, ""), nan) for i in cost["id"]]
        tax = pd.DataFrame(raw["fig2a"])
        tax["paper_w_per_tbps_bisection"] = [by_path.get(_TAX.get(int(n), ""), nan) for n in tax["switch_layers"]]
        return {"architectures": pd.DataFrame(rows), "power": power, "cost": cost, "scale_tax": tax}

    # ---- files

    def write(self, what: str, r: ModelResult, d: Path) -> list[str]:
        r.architectures.to_csv(d / "architectures.csv", index=False)
        if what == "power":
            r.power.to_csv(d / "table.csv", index=False)
            r.scale_tax.to_csv(d / "scale_tax.csv", index=False)
            _fig6a(r, d / "fig6a.png")
            return ["table.csv", "fig6a.png", "scale_tax.csv", "architectures.csv"]
        r.cost.to_csv(d / "table.csv", index=False)
        _fig6b(r, d / "fig6b.png")
        return ["table.csv", "fig6b.png", "architectures.csv"]

    # ---- terminal

    def show(self, what: str, r: ModelResult, out_console) -> None:
        if what == "power":
            _show_power(r, out_console)
        else:
            _show_cost(r, out_console)


VIEW = SiriusView()


def _fig6a(r: ModelResult, path: Path) -> Path:
    from . import plots

    ours = pd.DataFrame({"x": r.power["tunable_power_multiplier"], "pct": 100 * r.power["sirius_vs_esn"], "series": "this model"})
    pub = r.power.dropna(subset=["paper_sirius_vs_esn"])
    theirs = pd.DataFrame({"x": pub["tunable_power_multiplier"], "pct": 100 * pub["paper_sirius_vs_esn"], "series": "paper (§5)"})
    df = pd.concat([ours, theirs], ignore_index=True) if len(theirs) else ours
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


def _arch_table(r: ModelResult, title: str, money: bool) -> Table:
    t = Table(title=title)
    for c in ("architecture", "switches (rack + core)", "transceivers", "gratings", "$M" if money else "MW", "vs ESN", "Sirius / this"):
        t.add_column(c, justify="left" if c == "architecture" else "right")
    for _, x in r.architectures.iterrows():
        trx = f"{x['tunable_transceivers']:,} tunable" if x["tunable_transceivers"] else f"{x['fixed_transceivers']:,}"
        total = x["cost_total_usd"] / 1e6 if money else x["power_total_w"] / 1e6
        t.add_row(x["label"], f"{x['rack_switches']:,} + {x['core_switches']:,}", trx, f"{x['gratings']:,}", f"{total:,.2f}",
                  _pct(x["cost_vs_esn" if money else "power_vs_esn"]), _pct(x["sirius_cost_vs_this" if money else "sirius_power_vs_this"]))
    return t


def _show_power(r: ModelResult, out_console) -> None:
    out_console.print(_arch_table(r, f"Sirius §5 power model, {r.params['racks']:,} racks (tunable laser {r.params['tunable_power_multiplier']:g}x)", False))
    t = Table(title="Fig. 6a: Sirius power relative to ESN")
    for c in ("tunable laser x", "tunable transceiver W", "Sirius MW", "Sirius / ESN", "Sirius / ESN-OSUB", "paper"):
        t.add_column(c, justify="right")
    for _, x in r.power.iterrows():
        t.add_row(f"{x['tunable_power_multiplier']:g}", f"{x['tunable_transceiver_w']:.2f}", f"{x['sirius_w'] / 1e6:,.2f}",
                  _pct(x["sirius_vs_esn"]), _pct(x["sirius_vs_esn_osub"]), _pct(x["paper_sirius_vs_esn"]))
    out_console.print(t)
    t = Table(title="§2 scale tax (Fig. 2a): non-blocking Clos of the same switches and transceivers")
    for c in ("switch layers", "nodes", "W/Tbps of bisection", "W/Tbps of node capacity", "paper"):
        t.add_column(c, justify="right")
    for _, x in r.scale_tax.iterrows():
        paper = x["paper_w_per_tbps_bisection"]
        t.add_row(f"{int(x['switch_layers'])}", f"{int(x['nodes']):,}", f"{x['w_per_tbps_bisection']:.0f}", f"{x['w_per_tbps_node']:.0f}",
                  "-" if paper != paper else f"{paper:.0f}")
    out_console.print(t)


def _show_cost(r: ModelResult, out_console) -> None:
    c = r.cost
    m, em = c["tunable_cost_multiplier"].iloc[0], c["error_multiplier"].iloc[0]
    out_console.print(_arch_table(r, f"Sirius §5 cost model, {r.params['racks']:,} racks (tunable laser {m:g}x a fixed laser's cost)", True))
    t = Table(title=f"Fig. 6b: cost relative to ESN, tunable laser {m:g}x (error bar {em:g}x)")
    for col in ("architecture", f"$M at {m:g}x", f"$M at {em:g}x", "vs ESN", f"Sirius / this at {m:g}x", f"at {em:g}x", "paper (3x)"):
        t.add_column(col, justify="left" if col == "architecture" else "right")
    for _, x in c.iterrows():
        t.add_row(x["label"], f"{x['cost_usd'] / 1e6:,.1f}", f"{x['cost_usd_error'] / 1e6:,.1f}", " – ".join(dict.fromkeys([_pct(x["vs_esn"]), _pct(x["vs_esn_error"])])),
                  _pct(x["sirius_vs_this"]), _pct(x["sirius_vs_this_error"]), _pct(x["paper_sirius_vs_this"]))
    out_console.print(t)

