"""A reproduction point keeps its per-flow records (flows.parquet) only where
something reads them: a cdf or scatter panel at its x, a figure's
`reference`, a metric computed from flows, the figure's `flows = true` or
`--flows`. A point cached without them is run again when a figure needs
them; `photonet run` and `photonet sweep` still write flows.csv."""
import json

import pandas as pd
import pytest

import photonet
from photonet import reproduce as R
from photonet import sweep
from photonet.config import ConfigError

from conftest import photonet_cli
from test_reproduce_generic import BASE, EXPERIMENT, SERIES, write_experiment

LINE = BASE + f"""
[reproduce]
title = "line"
x_key = "workload.load"
x = [0.2, 0.6]
{SERIES}
panels = [{{ metric = "fct" }}]
"""

# The same runs as LINE at load 0.2 (same configs, so the same keys), drawn as a CDF.
CDF = BASE + f"""
[reproduce]
title = "cdf"
x_key = "workload.load"
x = [0.2]
{SERIES}
panels = [{{ kind = "cdf" }}]
"""

SHARE = EXPERIMENT + """
[metrics.fast]
fct = "share_within"
class = "all"
within_us = 50.0
label = "share within 50 µs"
"""


def files(out, key):
    return sorted(p.name for p in (out / "points" / key).iterdir())


def keys(r, fig):
    return list(dict.fromkeys(r.table[r.table["figure"] == fig]["key"]))


def test_points_keep_flows_only_where_a_figure_reads_them(tmp_path):
    root = tmp_path / "exp"
    write_experiment(root, {"fig01_line.toml": LINE})
    out = tmp_path / "out"
    r = R.reproduce("synth", out, root=root, jobs=1)
    assert len(keys(r, "fig01")) == 4
    for k in keys(r, "fig01"):
        assert files(out, k) == ["config.toml", "manifest.json", "params.json", "summary.json"]

    # A figure drawing a CDF of two of those runs: they are run again (the
    # cached results lack flows), now with flows.parquet; the others stay cached.
    write_experiment(root, {"fig01_line.toml": LINE, "fig02_cdf.toml": CDF})
    lines = []
    r2 = R.reproduce("synth", out, root=root, jobs=1, progress=lines.append)
    cdf_keys = keys(r2, "fig02")
    assert set(cdf_keys) < set(keys(r2, "fig01")), "the CDF's runs are the line's at load 0.2"
    assert r2.info["ran"] == 2 and r2.info["cached"] == 2, lines
    for k in cdf_keys:
        assert "flows.parquet" in files(out, k) and "flows.csv" not in files(out, k)
        flows = pd.read_parquet(out / "points" / k / "flows.parquet")
        assert len(flows) == json.loads((out / "points" / k / "summary.json").read_text())["flows"]
    report = (out / "report.md").read_text()
    assert "no flows.csv" not in report and "median FCT (µs)" in report
    # Run again: every point is cached, flows or not.
    r3 = R.reproduce("synth", out, root=root, jobs=1)
    assert r3.info["ran"] == 0 and r3.info["cached"] == 4
    assert r3.numbers.equals(r2.numbers) and r3.table.drop(columns="status").equals(r2.table.drop(columns="status"))


def test_flows_flag_keeps_every_points_records_and_reruns_those_without(tmp_path):
    root = tmp_path / "exp"
    write_experiment(root, {"fig01_line.toml": LINE})
    out = tmp_path / "out"
    R.reproduce("synth", out, root=root, jobs=1)
    r = R.reproduce("synth", out, root=root, jobs=1, flows=True)
    assert r.info["ran"] == 4
    for k in keys(r, "fig01"):
        assert "flows.parquet" in files(out, k)


def test_cli_flows_flag(tmp_path, monkeypatch):
    root = tmp_path / "exp"
    write_experiment(root, {"fig01_line.toml": LINE})
    out = tmp_path / "out"
    monkeypatch.setenv("PHOTONET_EXPERIMENTS", str(root))
    res = photonet_cli("reproduce", "synth", "--out", out, "--flows", "--jobs", "1")
    assert res.returncode == 0, res.stderr
    pts = pd.read_csv(out / "points.csv")
    assert all((out / "points" / k / "flows.parquet").exists() for k in pts["key"])


def test_figure_key_flows_and_its_errors(tmp_path):
    root = tmp_path / "exp"
    write_experiment(root, {"fig01_line.toml": LINE.replace('title = "line"', 'title = "line"\nflows = true')})
    r = R.reproduce("synth", tmp_path / "out", root=root, jobs=1)
    assert all((tmp_path / "out" / "points" / k / "flows.parquet").exists() for k in keys(r, "fig01"))
    write_experiment(root, {"fig01_line.toml": LINE.replace('title = "line"', 'title = "line"\nflows = "yes"')})
    with pytest.raises(ConfigError, match=r"`flows` = 'yes' must be true or false"):
        R.load_paper("synth", root)


def test_a_flow_metric_keeps_the_records_of_the_figures_that_use_it(tmp_path):
    """A `share_within` metric is computed from flows: the points of a figure
    whose claim (or panel) names it keep them; a figure not using it does
    not, and its points.csv cells of that metric are empty."""
    root = tmp_path / "exp"
    claim = LINE.replace('title = "line"', 'title = "uses it"') + """
[[reproduce.claims]]
what = "E share within 50 µs"
metric = "fast"
a = "E"
at = 0.2
expect = "> 0"
quote = "fast"
"""
    other = LINE.replace("x = [0.2, 0.6]", "x = [0.3]")
    write_experiment(root, {"fig01_claim.toml": claim, "fig02_other.toml": other}, experiment=SHARE)
    out = tmp_path / "out"
    r = R.reproduce("synth", out, root=root, jobs=1)
    for k in keys(r, "fig01"):
        assert "flows.parquet" in files(out, k)
    for k in keys(r, "fig02"):
        assert "flows.parquet" not in files(out, k)
    t = r.table.set_index("figure")
    assert t.loc["fig01", "fast"].notna().all() and t.loc["fig02", "fast"].isna().all()
    share = r.numbers.set_index("quantity").loc["E share within 50 µs", "ours"]
    # The share from the records as photonet.run gives them.
    res = photonet.run((out / "points" / keys(r, "fig01")[0] / "config.toml").read_text())
    f = res.flows
    assert share == pytest.approx(float((f["fct_us"] <= 50.0).sum()) / len(f), rel=0, abs=0)


def test_result_parquet_reads_back_as_the_flows_table_and_csv(tmp_path):
    """flows.parquet (written from the core's columns) is Result.flows: the
    same columns, dtypes and values, unfinished flows NaN; and the same
    table pandas reads from flows.csv."""
    r = photonet.run({"fabric": "esn", "topology": {"racks": 4, "servers_per_rack": 2, "uplinks": 1},
                      "workload": {"load": 0.9}, "stop": {"flows": 300}})
    out = r.write(tmp_path / "o", parquet=True)
    pq = pd.read_parquet(out / "flows.parquet")
    pd.testing.assert_frame_equal(pq, r.flows, check_exact=True)
    pd.testing.assert_frame_equal(pq, pd.read_csv(out / "flows.csv"), check_exact=True)
    assert pq["fct_us"].isna().any(), "some flows are unfinished at the end"
    # Written again over itself (flows.parquet is one of a result's files).
    r.write(tmp_path / "o", parquet=True)
    r.write(tmp_path / "p", flows_csv=False)
    assert sorted(p.name for p in (tmp_path / "p").iterdir()) == ["config.toml", "manifest.json", "summary.json"]


def test_sweep_points_still_write_flows_csv_and_old_points_files_load(tmp_path):
    pts = sweep.expand({"fabric": "esn", "topology": {"racks": 4, "servers_per_rack": 2, "uplinks": 1},
                        "stop": {"flows": 50}}, {"workload.load": [0.3]})
    assert pts[0].flows == "csv"
    sweep.run_local(tmp_path, pts)
    assert (sweep.point_dir(tmp_path, pts[0]) / "flows.csv").exists()
    # A points.json written before points said which records they keep.
    d = pts[0].stored()
    d.pop("flows")
    (tmp_path / "points.json").write_text(json.dumps({"points_per_task": 1, "points": [d]}))
    back, _, _ = sweep.read_points_file(tmp_path / "points.json")
    assert back[0].flows == "csv" and back[0].key == pts[0].key
    # A point needing records whose result has none is not done.
    p = pts[0]
    (sweep.point_dir(tmp_path, p) / "flows.csv").unlink()
    assert sweep.point_state(tmp_path, p) == "missing"
    p.flows = None
    assert sweep.point_state(tmp_path, p) == "done"
