import json

import pandas as pd

from conftest import photonet_cli

SMALL = """
[topology]
racks = 4
servers_per_rack = 4
uplinks = 4
uplink_rate = "10Gbps"
[workload]
load = 0.5
[workload.sizes]
dist = "pareto"
shape = 1.5
mean = "20KB"
[stop]
flows = 800
"""


def test_run_writes_outputs_and_prints_summary(tmp_path):
    cfg = tmp_path / "small.toml"
    cfg.write_text(SMALL)
    out = tmp_path / "out"
    p = photonet_cli("run", cfg, "--out", out, "--set", "workload.load=0.3", "--set", "fabric=esn_osub")
    assert p.returncode == 0, p.stderr
    assert "goodput" in p.stdout and "ESN-OSUB" in p.stdout
    s = json.loads((out / "summary.json").read_text())
    assert s["flows"] == 800 and s["fabric"].startswith("ESN-OSUB")
    m = json.loads((out / "manifest.json").read_text())
    assert "load = 0.3" in m["config"]


def test_run_bad_override_names_the_key_and_writes_nothing(tmp_path):
    cfg = tmp_path / "small.toml"
    cfg.write_text(SMALL)
    out = tmp_path / "out"
    p = photonet_cli("run", cfg, "--out", out, "--set", "workload.sizes.mean=\"12XB\"")
    assert p.returncode == 2
    assert "workload.sizes.mean" in p.stderr and "12XB" in p.stderr, p.stderr
    assert not out.exists()
    p = photonet_cli("run", tmp_path / "missing.toml")
    assert p.returncode == 2 and "does not exist" in p.stderr


def test_compare_writes_table_and_plots_and_resumes(tmp_path):
    out = tmp_path / "cmp"
    args = ["compare", "--out", out, "--flows", "400", "--loads", "0.3,0.8", "--set", "topology.racks=8"]
    p = photonet_cli(*args)
    assert p.returncode == 0, p.stderr
    table = pd.read_csv(out / "table.csv")
    assert len(table) == 2 * len(set(table["fabric"]))
    assert {"esn", "esn_osub"} <= set(table["fabric"])
    for png in ("fct_vs_load.png", "goodput_vs_load.png"):
        assert (out / png).read_bytes()[:4] == b"\x89PNG"
    # A second run finds every point done and does not rerun any.
    stamps = {d.name: (d / "summary.json").stat().st_mtime_ns for d in (out / "points").iterdir()}
    p = photonet_cli(*args)
    assert p.returncode == 0, p.stderr
    after = {d.name: (d / "summary.json").stat().st_mtime_ns for d in (out / "points").iterdir()}
    assert stamps == after


def test_sweep_grid_and_collect(tmp_path):
    cfg = tmp_path / "small.toml"
    cfg.write_text(SMALL)
    out = tmp_path / "sw"
    p = photonet_cli("sweep", cfg, "--grid", "workload.load=0.2,0.4", "--grid", "seed=1,2", "--out", out, "--jobs", "1")
    assert p.returncode == 0, p.stderr
    t = pd.read_csv(out / "table.csv")
    assert len(t) == 4 and set(t["seed"]) == {1, 2}
    # Higher load, more offered bytes.
    assert t.groupby("workload.load")["offered_load"].mean().is_monotonic_increasing
    p = photonet_cli("sweep", cfg, "--grid", "workload.load=0.2,0.4", "--out", tmp_path / "sl", "--backend", "slurm")
    assert p.returncode == 0, p.stderr
    script = (tmp_path / "sl" / "sweep.sbatch").read_text()
    assert "--array=0-1" in script and "sweep-point" in script


def test_default_compare_shows_what_the_papers_argue(tmp_path):
    """A smaller version of the default `compare` scenario (same workload, load
    basis and per-server rate; 8 racks, 6,000 flows): at the top load the 3:1
    oversubscribed Clos delivers clearly less than ESN and SIRIUS, and its p99
    FCT of short flows (< 100 KB, the Sirius paper's class) is above theirs."""
    from photonet.compare import compare

    table = compare(tmp_path / "cmp", loads=[0.8], fabrics=["esn", "esn_osub", "sirius"], jobs=2,
                    overrides=["topology.racks=8", "stop.flows=6000"])
    row = {r["fabric"]: r for _, r in table.iterrows()}
    assert {r["load_basis"] for r in row.values()} == {"realised"}
    osub, esn, sirius = row["esn_osub"], row["esn"], row["sirius"]
    assert osub["goodput_steady"] < 0.8 * esn["goodput_steady"], table.to_string()
    assert osub["goodput_steady"] < 0.8 * sirius["goodput_steady"], table.to_string()
    short = "fct<100KB_p99_us"
    assert osub[short] > 1.5 * esn[short] and osub[short] > 1.2 * sirius[short], table.to_string()
    # The offered load is the requested one on the realised basis.
    assert abs(esn["offered_load"] - 0.8) < 0.05


def test_compare_table_fits_100_columns_without_cutting_numbers():
    """The compare table uses the registry's short labels and fits a
    100-column terminal with every number whole (no '…'), FCTs above 999 µs
    written out, and a flagged point marked."""
    import pandas as pd
    from rich.console import Console

    import photonet
    from photonet.cli import _fmt, compare_rows, compare_table

    assert _fmt(1234.5) == "1,234" and _fmt(999.6) == "1,000" and _fmt(12.34) == "12.3"
    longest = max(photonet.fabrics(), key=lambda f: len(f.short))
    t = pd.DataFrame([{"short": longest.short, "fabric_name": longest.label, "load": 1.0, "offered_load": 1.012, "goodput_steady": 0.998,
                       "fct<10KB_censored_p99_us": 123456.7, "fct<10KB_p99_us": 98765.4, "unfinished_frac": 0.678, "flagged": True}])
    rows = compare_rows(t, "<10KB")
    con = Console(width=100, record=True)
    con.print(compare_table(rows, "<10KB", "t", [20000]))
    text = con.export_text()
    assert "…" not in text
    for cell in rows[0][:-1]:
        assert cell in text, cell
    assert "123,457" in text and "67.8" in text and "⚑" in text
    assert max(len(line) for line in text.splitlines()) <= 100


def test_compare_collectives_scenario_by_name(tmp_path):
    out = tmp_path / "coll"
    p = photonet_cli("compare", "--scenario", "collectives", "--out", out, "--fabrics", "ideal,esn", "--set", "topology.racks=4",
                     "--jobs", "1")
    assert p.returncode == 0, p.stderr
    t = pd.read_csv(out / "table.csv")
    # 5 cases, the mix with two jobs: 6 rows per fabric.
    assert len(t) == 12 and set(t["fabric"]) == {"ideal", "esn"}
    assert (t["unfinished_flows"] == 0).all()
    ideal = t[t["fabric"] == "ideal"]
    assert ((ideal["slowdown"] - 1).abs() < 0.05).all(), ideal
    # ESN's 1 us of latency against the reference's 200 ns: latency-bound cases lose.
    esn = t[t["fabric"] == "esn"].set_index("case")
    assert esn.loc["ring all-reduce 64KB", "slowdown"] > esn.loc["ring all-reduce 4MB", "slowdown"]
    assert "slowdown vs ideal" in (out / "table.md").read_text()
    assert (out / "slowdown.png").read_bytes()[:4] == b"\x89PNG"
