"""`photonet reproduce`: the Sirius harness on a tiny override (electrical
fabrics only, 200 flows per point), resumption, skipped and failed points, and
the claim arithmetic behind numbers.csv."""
import math
import re
import shutil
import textwrap

import pandas as pd
import pytest

import photonet
from photonet import reproduce as R
from photonet import sweep
from photonet.config import ConfigError, tomllib

from conftest import REPO, photonet_cli

TINY = ["stop.flows=200"]
ELECTRICAL = ["esn", "esn_osub"]
SIRIUS_DIR = REPO / "experiments" / "sirius"


def claims_in_files():
    n = 0
    for p in sorted(SIRIUS_DIR.glob("*.toml")):
        if p.name != "experiment.toml":
            n += len(tomllib.loads(p.read_text())["reproduce"].get("claims", []))
    return n


def mtimes(out):
    return {d.name: (d / "summary.json").stat().st_mtime_ns for d in (out / "points").iterdir() if d.is_dir()}


def test_cli_quick_harness_writes_everything_and_resumes(tmp_path):
    out = tmp_path / "rep"
    args = ["reproduce", "sirius", "--out", out, "--set", "stop.flows=200", "--fabrics", "esn,esn_osub", "--jobs", "2"]
    p = photonet_cli(*args)
    assert p.returncode == 0, p.stderr
    for f in ("report.md", "numbers.csv", "points.csv"):
        assert (out / f).stat().st_size > 0, f
    for fig in ("fig09", "fig10", "fig11", "fig12", "fig13", "model"):
        assert (out / f"{fig}.png").read_bytes()[:4] == b"\x89PNG", fig
    points = pd.read_csv(out / "points.csv", keep_default_na=False)
    # one progress line per point: every distinct run once, every skipped (figure, series, x) once
    lines = [ln for ln in p.stderr.splitlines() if ln.startswith("[")]  # not the "(sensitivity: …)" runs
    distinct = points[points["key"] != ""]["key"].nunique()
    skipped = (points["key"] == "").sum()
    assert len(lines) == distinct + skipped
    assert sum("done in" in ln for ln in lines) == distinct
    assert all(s.startswith("skipped: fabric sirius") for s in points[points["fabric"].str.startswith("sirius")]["status"])
    assert set(points[points["fabric"].isin(ELECTRICAL)]["status"]) == {"done"}
    nums = pd.read_csv(out / "numbers.csv")
    assert len(nums) == claims_in_files()
    assert list(nums.columns[:7]) == ["figure", "quantity", "unit", "ours", "paper", "ratio", "difference"]
    report = (out / "report.md").read_text()
    assert "78.2" in report and "6.7" in report and "![fig09](fig09.png)" in report
    # the §5 model is reproduced alongside: its claims, its figure, its report
    assert "0.23" in report and "![model](model.png)" in report and (out / "model.json").exists()
    # report.html: the same report in one file, every figure embedded (opens offline)
    html = (out / "report.html").read_text()
    srcs = re.findall(r'<img[^>]*src="([^"]*)"', html)
    assert len(srcs) == len(list(out.glob("*.png"))) and all(s.startswith("data:image/png;base64,") for s in srcs)
    assert "78.2" in html and "<table>" in html

    # A second run finds every point done: nothing reruns, results untouched.
    before = mtimes(out)
    p = photonet_cli(*args)
    assert p.returncode == 0, p.stderr
    assert mtimes(out) == before
    main = [ln for ln in p.stderr.splitlines() if ln.startswith("[")]  # not the "(sensitivity: …)" lines
    assert "done in" not in p.stderr and sum("cached (" in ln for ln in main) == distinct


def test_resume_runs_only_missing_points(tmp_path):
    out = tmp_path / "rep"
    kw = dict(overrides=TINY, fabrics=ELECTRICAL, only=["fig09"], jobs=2)
    first = R.reproduce("sirius", out, **kw)
    assert first.info["ran"] == 10 and first.info["cached"] == 0  # 2 fabrics x 5 loads
    victim = first.table[first.table["fabric"] == "esn_osub"]["key"].iloc[-1]
    keep = mtimes(out)
    shutil.rmtree(out / "points" / victim)  # as if killed before this point finished
    lines = []
    second = R.reproduce("sirius", out, progress=lines.append, **kw)
    assert second.info["ran"] == 1 and second.info["cached"] == 9
    done = [ln for ln in lines if "done in" in ln]
    assert len(done) == 1 and "ESN-OSUB (Ideal)" in done[0] and done[0].startswith("[")
    after = mtimes(out)
    assert {k: v for k, v in after.items() if k != victim} == {k: v for k, v in keep.items() if k != victim}
    # same config, same seed: the rerun point has the same numbers
    a = first.table.set_index("key").loc[victim, ["fct", "goodput"]]
    b = second.table.set_index("key").loc[victim, ["fct", "goodput"]]
    assert a.equals(b)


def test_points_shared_between_figures_run_once(tmp_path):
    r = R.reproduce("sirius", tmp_path / "rep", overrides=TINY, fabrics=["esn"], only=["fig09", "fig12", "fig13"], jobs=2)
    t = r.table[r.table["key"] != ""]
    # ESN at L=0.5 in fig09 and ESN at F=100KB, L=50% in fig13 are the same run
    k09 = t[(t["figure"] == "fig09") & (t["x"] == 0.5)]["key"].item()
    k13 = t[(t["figure"] == "fig13") & (t["series"] == "ESN (Ideal), L = 50%") & (t["x"] == 100000)]["key"].item()
    assert k09 == k13
    assert r.info["ran"] == t["key"].nunique() < len(t)
    # plus the points only the reading's alternatives (sensitivity table) ran
    assert len(list((r.out / "points").iterdir())) == t["key"].nunique() + r.info["sensitivity_points"]


def test_fabric_not_built_is_skipped_not_a_crash(tmp_path):
    out = tmp_path / "rep"
    r = R.reproduce("sirius", out, overrides=TINY, only=["fig09"], available=["esn"], jobs=1)
    st = r.table.set_index("series")["status"]
    assert set(st["ESN-OSUB (Ideal)"]) == {"skipped: fabric esn_osub not built"}
    assert set(st["SIRIUS"]) == {"skipped: fabric sirius not built"}
    assert set(st["ESN (Ideal)"]) == {"done"}
    report = (out / "report.md").read_text()
    assert "skipped: fabric esn_osub not built (5 points)" in report
    ctx = r.numbers[r.numbers["quantity"].str.startswith("ESN (Ideal) goodput / ESN-OSUB")].iloc[0]
    assert math.isnan(ctx["ours"]) and "esn_osub not built" in ctx["note"]
    assert (out / "fig09.png").read_bytes()[:4] == b"\x89PNG"


def test_a_failing_point_is_reported_and_the_others_finish(tmp_path, monkeypatch):
    real = sweep.run_point
    calls = []

    def flaky(out, p, progress=None):
        calls.append(p.key)
        if p.params["series"] == "ESN-OSUB (Ideal)" and p.params["x"] == 0.75:
            raise RuntimeError("boom")
        return real(out, p, progress=progress)

    monkeypatch.setattr(sweep, "run_point", flaky)
    out = tmp_path / "rep"
    r = R.reproduce("sirius", out, overrides=TINY, fabrics=ELECTRICAL, only=["fig09"], jobs=2)
    assert r.info["failed"] == 1 and r.info["ran"] == 9
    bad = r.table[r.table["status"].str.startswith("failed")]
    assert len(bad) == 1 and "boom" in bad["status"].item()
    assert "**Failed points:**" in (out / "report.md").read_text()
    # the failed point has no result and is retried by the next run
    monkeypatch.setattr(sweep, "run_point", real)
    r2 = R.reproduce("sirius", out, overrides=TINY, fabrics=ELECTRICAL, only=["fig09"], jobs=2)
    assert r2.info["ran"] == 1 and r2.info["failed"] == 0


def test_bad_names_are_errors_that_name_them(tmp_path):
    with pytest.raises(ConfigError, match="fig99.*fig09, fig10, fig11, fig12, fig12w, fig12x, fig13"):
        R.reproduce("sirius", tmp_path / "x", only=["fig09", "fig99"])
    with pytest.raises(ConfigError, match="'nosuch'"):
        R.reproduce("nosuch", tmp_path / "x")
    with pytest.raises(ConfigError, match="'esm'"):
        R.reproduce("sirius", tmp_path / "x", fabrics=["esm"])
    assert not (tmp_path / "x").exists()  # nothing ran, nothing written
    p = photonet_cli("reproduce", "sirius", "--out", tmp_path / "y", "--only", "fig9,fig42")
    assert p.returncode == 2 and "fig42" in p.stderr and "fig09" in p.stderr
    assert not (tmp_path / "y").exists()
    # fig9 / 9 / fig09 all name Figure 9
    paper = R.load_paper("sirius")
    assert [f.id for f in R.select_figures(paper, ["9", "fig9", "fig13"])] == ["fig09", "fig13"]


def test_every_point_validates_at_both_scales():
    """Each figure's points are valid configs; sirius points too once the fabric is built."""
    paper = R.load_paper("sirius")
    built = photonet.fabric_names()
    table_of = {f.name: f.table for f in photonet.fabrics()}
    tables = set(table_of.values())
    for scale in R.SCALES:
        figs, fps = R.build_points(paper, scale)
        assert len([f for f in figs if not f.is_model]) == 8
        assert [f.id for f in figs if f.is_model] == ["model"]
        for fp in fps:
            if fp.fabric in built:
                assert fp.key and fp.point is not None
                cfg = tomllib.loads(fp.point.config_toml)
                assert cfg["fabric"] == fp.fabric
                assert fp.key == R.point_key(fp.point.config_toml, fp.point.inputs)
                # other fabrics' tables never change a point's key: the complete
                # config holds its own fabric's table only
                assert tables & set(cfg) == {table_of[fp.fabric]}
            else:
                assert fp.status == f"skipped: fabric {fp.fabric} not built" and fp.key is None
        esn = [fp for fp in fps if fp.fabric == "esn"]
        flows = {tomllib.loads(fp.point.config_toml)["stop"]["flows"] for fp in esn}
        # fig12x (fixed 100 KB flows) runs 50,000 flows at full scale; fig12w
        # (one all-to-all) and fig13s (a fixed time of arrivals) have no flow count.
        assert flows == ({200000, 50000, 100000000} if scale == "full" else {10000, 100000000})


def _df(rows):
    return pd.DataFrame(rows, columns=["series", "x", "status", "fct", "goodput"])


def test_claim_arithmetic():
    df = _df([
        ("A", 0.1, "done", 10.0, 0.10), ("A", 1.0, "done", 40.0, 0.80),
        ("B", 0.1, "done", 20.0, 0.10), ("B", 1.0, "cached", 50.0, 0.20),
        ("S", 0.1, "skipped: fabric sirius not built", float("nan"), float("nan")),
    ])
    ev = R.evaluate_claim
    assert ev(df, {"metric": "fct", "kind": "reduction", "a": "A", "b": "B", "at": "max"})[0] == pytest.approx(0.5)
    assert ev(df, {"metric": "fct", "kind": "reduction", "a": "A", "b": "B", "at": 1.0})[0] == pytest.approx(0.2)
    assert ev(df, {"metric": "goodput", "kind": "ratio", "a": "A", "b": "B", "at": "max"})[0] == pytest.approx(4.0)
    assert ev(df, {"metric": "goodput", "kind": "ratio", "a": "A", "b": "B", "at": "min"})[0] == pytest.approx(1.0)
    assert ev(df, {"metric": "fct", "kind": "value", "a": "B", "at": "max"})[0] == 50.0
    assert ev(df, {"metric": "fct", "kind": "ratio", "a": "A", "b": "A", "a_at": 1.0, "b_at": 0.1})[0] == pytest.approx(4.0)
    v, why = ev(df, {"metric": "fct", "kind": "ratio", "a": "S", "b": "A", "at": 0.1})
    assert math.isnan(v) and why == "skipped: fabric sirius not built"


def test_numbers_ratio_difference_and_notes():
    fig = R.Figure(id="figX", path=SIRIUS_DIR / "x.toml", title="t", base={}, xs=[0.1, 1.0], x_sets=[{}, {}], xlabel="load (%)",
                   x_percent=True, logx=False, series=[], panels=[], notes="", scale_set={},
                   claims=[{"what": "r", "metric": "goodput", "kind": "ratio", "a": "A", "b": "B", "at": 1.0, "paper": 5.0},
                           {"what": "q", "metric": "fct", "kind": "value", "a": "A", "at": "max", "paper": 80.0, "unit": "KB",
                            "scale_sensitive": True},
                           {"what": "e", "metric": "fct", "kind": "ratio", "a": "B", "b": "A", "at": 1.0, "expect": "> 1",
                            "paper_text": "> 1"},
                           {"what": "f", "metric": "fct", "kind": "ratio", "a": "B", "b": "A", "at": 0.1, "expect": "< 1"},
                           {"what": "g", "metric": "goodput", "kind": "ratio", "a": "A", "b": "B", "at": 0.1, "expect": "> 1"}])
    df = _df([("A", 0.1, "done", 10.0, 0.1), ("A", 1.0, "done", 40.0, 0.8), ("B", 0.1, "done", 20.0, 0.1), ("B", 1.0, "done", 30.0, 0.2)])
    df["figure"] = "figX"
    n = R.numbers([fig], df, "quick", "32 racks, 10,000 flows").set_index("quantity")
    assert n.loc["r", "ours"] == pytest.approx(4.0) and n.loc["r", "ratio"] == pytest.approx(0.8)
    assert n.loc["r", "difference"] == pytest.approx(-1.0) and n.loc["r", "unit"] == "x"
    assert n.loc["q", "ratio"] == pytest.approx(0.5) and "not comparable" in n.loc["q", "note"]
    assert "unlike the paper" in n.loc["e", "note"] and math.isnan(n.loc["e", "paper"])
    assert "unlike the paper" in n.loc["f", "note"]                 # 20 / 10 = 2, expected < 1
    assert n.loc["g", "note"].startswith("no clear effect")          # 0.1 / 0.1 = 1: neither


def test_bad_experiment_file_names_file_and_key(tmp_path):
    d = tmp_path / "exp" / "toy"
    d.mkdir(parents=True)
    (d / "experiment.toml").write_text("[scales.full]\nset = {}\n[scales.quick]\nset = {}\n[metrics.goodput]\nsummary = \"goodput\"\n")
    fig = textwrap.dedent("""
        [topology]
        racks = 4
        servers_per_rack = 2
        uplinks = 2
        [stop]
        flows = 100
        [reproduce]
        x_key = "workload.load"
        x = [0.2, 0.4]
        series = [{ label = "E", fabric = "esn" }]
        panels = [{ metric = "goodput" }]
        [[reproduce.claims]]
        what = "c"
        metric = "goodput"
        kind = "ratio"
        a = "E"
        b = "Nope"
        sanity = true
        expect = "> 0.5"
    """)
    (d / "fig01_toy.toml").write_text(fig)
    with pytest.raises(ConfigError, match=r"fig01_toy.toml.*`b` = 'Nope' is not a series label"):
        R.load_paper("toy", tmp_path / "exp")
    (d / "fig01_toy.toml").write_text(fig.replace('b = "Nope"', 'b = "E"').replace("x = [0.2, 0.4]", "x = [0.2, 0.4]\nxs = 1"))
    with pytest.raises(ConfigError, match=r"fig01_toy.toml.*unknown key\(s\) 'xs'"):
        R.load_paper("toy", tmp_path / "exp")
    # a config error of a point names the figure file and the series
    (d / "fig01_toy.toml").write_text(fig.replace('b = "Nope"', 'b = "E"').replace("uplinks = 2", 'uplinks = 2\nuplink_rate = "5Gbs"'))
    with pytest.raises(ConfigError, match=r"fig01_toy.toml: series 'E' at x = 0.2: .*uplink_rate"):
        R.reproduce("toy", tmp_path / "out", root=tmp_path / "exp")
    # and a good one runs, with the toy's own experiments root
    (d / "fig01_toy.toml").write_text(fig.replace('b = "Nope"', 'b = "E"'))
    r = R.reproduce("toy", tmp_path / "out", root=tmp_path / "exp", jobs=1)
    assert r.info["ran"] == 2 and r.numbers["ours"].item() == pytest.approx(1.0)


def test_point_key_ignores_name_and_other_fabrics_tables():
    from photonet.config import complete

    def key(cfg):
        return R.point_key(complete(cfg)[0])

    cfg = {"fabric": "esn", "stop": {"flows": 100}}
    k = key(cfg)
    assert key({**cfg, "name": "other"}) == k
    knob = {**cfg, "sirius": {"queue_bound": 8}}
    assert key(knob) == k      # a Sirius knob does not touch an ESN run
    ideal = {**cfg, "fabric": "sirius_ideal"}
    assert key({**ideal, "sirius": {"queue_bound": 8}}) != key(ideal)  # but keys a Sirius run
    assert key({**cfg, "seed": 2}) != k
