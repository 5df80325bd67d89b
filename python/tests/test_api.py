import json
import math

import pandas as pd
import pytest

import photonet
from photonet import ConfigError

from conftest import SHARED


def test_run_returns_dataframes_and_consistent_summary(small):
    r = photonet.run(small)
    s = r.summary
    assert s["flows"] == 1500 == len(r.flows)
    assert s["completed"] == r.flows["finish_us"].notna().sum()
    done = r.flows.dropna()
    assert (done["fct_us"] > 0).all()
    # The summary's p99 for all flows is the nearest-rank p99 of the flow table.
    fcts = sorted(done["fct_us"])
    nearest = fcts[math.ceil(0.99 * len(fcts)) - 1]
    assert s["fct"]["all"]["p99_us"] == pytest.approx(nearest, rel=1e-9)
    small_flows = done[done["bytes"] < 10_000]
    assert s["fct"]["<10KB"]["count"] == len(small_flows)
    # Goodput = delivered bytes / (T * N * R).
    cap = s["sim_time_us"] * 1e-6 * s["hosts"] * s["host_rate_bps"] / 8
    assert s["goodput"] == pytest.approx(r.flows["delivered_bytes"].sum() / cap)
    assert s["invariant_violations"] == []


def test_fixed_size_offered_load_matches_request(small):
    small["workload"]["sizes"] = {"dist": "fixed", "size": "10KB"}
    small["stop"]["flows"] = 20000
    r = photonet.run(small)
    # Relative sd of a Poisson count over 20000 arrivals is 0.7 %.
    assert r.summary["offered_load"] == pytest.approx(0.6, rel=0.03)


def test_meta_hadoop_cdf_read_from_shared(small):
    if not SHARED.exists():
        pytest.skip("../shared/workloads not present")
    small["workload"]["sizes"] = {"dist": "cdf", "file": "meta_hadoop.cdf"}
    small["stop"]["flows"] = 40000
    r = photonet.run(small)
    frac = (r.flows["bytes"] < 1000).mean()
    # 60.00 % of flows are < 1 KB (shared/workloads/README.md); sd 0.25 % at n = 40000.
    assert frac == pytest.approx(0.60, abs=0.012)


def test_same_seed_gives_identical_outputs(tmp_path, small):
    a = photonet.run(small).write(tmp_path / "a")
    b = photonet.run(small).write(tmp_path / "b")
    assert (a / "flows.csv").read_bytes() == (b / "flows.csv").read_bytes()
    assert (a / "summary.json").read_bytes() == (b / "summary.json").read_bytes()
    small["seed"] = 99
    c = photonet.run(small).write(tmp_path / "c")
    assert (a / "flows.csv").read_bytes() != (c / "flows.csv").read_bytes()


def test_write_is_complete_and_leaves_no_temporaries(tmp_path, small):
    small["metrics"] = {"time_series": "10us"}
    r = photonet.run(small)
    out = r.write(tmp_path / "run")
    names = sorted(p.name for p in out.iterdir())
    assert names == ["config.toml", "flows.csv", "manifest.json", "series.csv", "summary.json"]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]
    m = json.loads((out / "manifest.json").read_text())
    assert m["seed"] == 1 and m["events"] > 0 and m["wall_s"] > 0 and "config" in m
    flows = pd.read_csv(out / "flows.csv")
    assert len(flows) == 1500
    series = pd.read_csv(out / "series.csv")
    assert series["bytes"].sum() == pytest.approx(r.summary["delivered_bytes"], rel=1e-9)


def test_progress_callback_can_cancel(small):
    small["stop"]["flows"] = 200000
    calls = []

    def progress(now_us, arrived, completed, events):
        calls.append(arrived)
        return False

    r = photonet.run(small, progress=progress)
    assert r.cancelled and calls and r.summary["flows"] < 200000


@pytest.mark.parametrize(
    "cfg, key, words",
    [
        ({"workload": {"lod": 0.5}}, "workload", ["unknown field `lod`"]),
        ({"turbo": True}, "turbo", ["unknown field `turbo`"]),
        ({"topology": {"uplink_rate": "50Gbs"}}, "topology.uplink_rate", ["50Gbs", "unknown unit"]),
        ({"esn": {"base_latency": "10 nss"}}, "esn.base_latency", ["nss"]),
        ({"workload": {"load": 0}}, "workload.load", ["> 0"]),
        ({"workload": {"load": -1.0}}, "workload.load", ["-1"]),
        ({"workload": {"sizes": {"dist": "fixed", "size": "0B"}}}, "workload.sizes.size", ["at least one byte"]),
        ({"workload": {"sizes": {"dist": "fixed", "size": "-5B"}}}, "workload.sizes.size", ["negative"]),
        ({"topology": {"server_rate": "0Gbps"}}, "topology.server_rate", ["> 0"]),
        ({"workload": {"sizes": {"dist": "pareto", "shape": 0.9, "mean": "1KB"}}}, "workload.sizes.shape", ["> 1"]),
    ],
)
def test_bad_config_is_rejected_naming_key_value_and_reason(cfg, key, words):
    with pytest.raises(ConfigError) as e:
        photonet.run(cfg)
    msg = str(e.value)
    assert key in msg, msg
    for w in words:
        assert w in msg, msg


def test_bad_cdf_files(tmp_path):
    unsorted = tmp_path / "unsorted.cdf"
    unsorted.write_text("100 0.2\n50 0.5\n1000 1\n")
    with pytest.raises(ConfigError, match=r"workload.sizes.file.*line 2.*not sorted"):
        photonet.run({"workload": {"sizes": {"dist": "cdf", "file": str(unsorted)}}})
    short = tmp_path / "short.cdf"
    short.write_text("100 0.2\n1000 0.9\n")
    with pytest.raises(ConfigError, match=r"must end at 1"):
        photonet.run({"workload": {"sizes": {"dist": "cdf", "file": str(short)}}})
    with pytest.raises(ConfigError, match=r"file not found"):
        photonet.run({"workload": {"sizes": {"dist": "cdf", "file": "no_such.cdf"}}})


def test_trace_replay_and_src_equals_dst(tmp_path, small):
    t = tmp_path / "trace.csv"
    t.write_text("src,dst,bytes,start\n0,5,1MB,0ns\n3,9,2000,1us\n")
    cfg = {**small, "workload": {"pattern": {"kind": "trace", "file": str(t)}}, "stop": {"drain": True}}
    r = photonet.run(cfg)
    assert list(r.flows["bytes"]) == [1_000_000, 2000]
    # 1 MB at 10 Gbps = 800 us, + 1 us base latency, alone in the network.
    assert r.flows["fct_us"][0] == pytest.approx(801.0)
    t.write_text("src,dst,bytes,start\n0,5,1MB,0ns\n4,4,10,1us\n")
    with pytest.raises(ConfigError, match=r"line 3.*src = dst = 4"):
        photonet.run(cfg)


def test_cancelled_sweep_point_writes_nothing_and_reruns(tmp_path, small):
    from photonet import sweep

    small["stop"]["flows"] = 200_000  # long enough to be cancelled mid-run
    (p,) = sweep.expand(small, {"fabric": ["sirius"]})
    with pytest.raises(KeyboardInterrupt):
        sweep.run_point(tmp_path, p, progress=lambda *a: False)
    assert not sweep.is_done(tmp_path, p)
    assert not sweep.point_dir(tmp_path, p).exists()


@pytest.mark.parametrize("fabric", ["sirius", "negotiator_thin_clos", "mordia"])
def test_a_run_builds_its_fabric_once(small, fabric):
    # Through the path users run (photonet.run): the config crosses into the
    # core once and the fabric is planned and built once.
    before = photonet._core.fabric_builds()
    r = photonet.run({**small, "fabric": fabric, "stop": {"flows": 50}})
    assert r.summary["completed"] > 0
    assert photonet._core.fabric_builds() - before == 1


def test_sweep_and_compare_points_build_their_fabric_once(tmp_path, small):
    # A sweep validates every point before anything runs (that plans and
    # builds each point's fabric); the run then uses the prepared point, so
    # each point's fabric is built once in all. Jobs = 1: the runs are on this
    # thread, where the core counts builds.
    from photonet import sweep
    from photonet.compare import compare

    small["stop"]["flows"] = 100
    grid = {"fabric": ["esn", "sirius"], "workload.load": [0.2, 0.4, 0.6]}
    before = photonet._core.fabric_builds()
    points = sweep.expand(small, grid)
    assert photonet._core.fabric_builds() - before == 6
    assert sweep.run_local(tmp_path / "sweep", points, jobs=1) == []
    assert photonet._core.fabric_builds() - before == 6
    assert len(sweep.collect(tmp_path / "sweep", points)) == 6
    # Two points of one key (a value the fabric ignores): only the first
    # keeps its prepared run, the one that runs.
    a, b = sweep.expand(small, {"fabric": ["esn"], "sirius.queue_bound": [4, 8]})
    assert a.key == b.key and a.prepared is not None and b.prepared is None

    before = photonet._core.fabric_builds()
    table = compare(tmp_path / "cmp", loads=[0.3, 0.6], fabrics=["esn", "mordia"], jobs=1,
                    overrides=["topology.racks=4", "topology.servers_per_rack=2", "stop.flows=100"])
    assert len(table) == 4
    assert photonet._core.fabric_builds() - before == 4
    # A second compare finds every point done: validating builds each once, nothing runs.
    before = photonet._core.fabric_builds()
    compare(tmp_path / "cmp", loads=[0.3, 0.6], fabrics=["esn", "mordia"], jobs=1,
            overrides=["topology.racks=4", "topology.servers_per_rack=2", "stop.flows=100"])
    assert photonet._core.fabric_builds() - before == 4


def test_a_swept_point_keeps_its_key_and_travels_without_its_prepared_run(tmp_path, small):
    # The key hashes the config as given, not the test suite's invariant checks.
    from photonet import sweep
    from photonet.config import complete

    (p,) = sweep.expand(small, {"fabric": ["esn"]})
    text, _ = complete({**small, "fabric": "esn"})
    assert p.key == sweep.point_key(text, {}) and p.config_toml == text
    assert "prepared" not in p.stored() and p.portable().prepared is None
    assert p.prepared is not None
    sweep.run_point(tmp_path, p)
    assert p.prepared is None  # ran once, consumed
    assert sweep.is_done(tmp_path, p)


def test_a_bad_sweep_point_is_named_before_anything_runs(tmp_path, small):
    # Validation prepares every point first: the bad one is an error naming
    # the point, the key, the value and why, and no point has run.
    from photonet import sweep

    with pytest.raises(ConfigError, match=r"sweep point \{'workload.load': -1\}: .*workload.load.*-1.*> 0"):
        sweep.expand(small, {"workload.load": [0.3, -1]})
    # A check that needs the built fabric (a trace endpoint beyond its 16 hosts).
    t = tmp_path / "t.csv"
    t.write_text("src,dst,bytes,start\n0,99,1KB,0ns\n")
    small["workload"]["pattern"] = {"kind": "trace", "file": str(t)}
    why = r"sweep point \{'fabric': 'esn'\}: .*workload.pattern.file.*dst = 99: the topology has hosts 0..15"
    with pytest.raises(ConfigError, match=why):
        sweep.expand(small, {"fabric": ["esn", "sirius"]})
