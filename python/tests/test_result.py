"""How a run's per-flow results cross from the core into Python: numpy columns
owned by the core's buffers, the pandas table built only when read, and no
pandas / matplotlib import on the `run` and `bench` paths."""
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

import photonet
from photonet.api import FLOW_COLUMNS, UNFINISHED, Result

from conftest import REPO


def _trace_run(tmp_path, small):
    t = tmp_path / "trace.csv"
    # Alone in a non-blocking network at 10 Gbps with 1 us base latency:
    # 1 MB takes 800 us (+1 us), 2000 B 1.6 us (+1 us); 10 MB (8 ms) cannot
    # finish by the 900 us stop.
    t.write_text("src,dst,bytes,start\n0,5,1MB,0ns\n3,9,2000,1us\n1,2,10MB,5us\n")
    cfg = {**small, "workload": {"pattern": {"kind": "trace", "file": str(t)}}, "stop": {"duration": "900us"}}
    return photonet.run(cfg)


def test_flow_columns_hold_the_core_values_and_agree_with_the_frame(tmp_path, small):
    r = _trace_run(tmp_path, small)
    c = r.flow_columns
    assert {k: str(v.dtype) for k, v in c.items()} == FLOW_COLUMNS
    assert list(c["src"]) == [0, 3, 1] and list(c["dst"]) == [5, 9, 2]
    assert list(c["bytes"]) == [1_000_000, 2000, 10_000_000]
    assert list(c["start_ps"]) == [0, 1_000_000, 5_000_000]
    # Hand-worked finish times (ps), and the unfinished flow's sentinel.
    assert list(c["finish_ps"]) == [801_000_000, 3_600_000, UNFINISHED]
    assert c["delivered_bytes"][0] == 1_000_000 and c["delivered_bytes"][1] == 2000
    assert 0 < c["delivered_bytes"][2] < 10_000_000
    # The frame is the same data: ints as int64, times in us, NaN where unfinished.
    f = r.flows
    assert list(f.columns) == ["id", "src", "dst", "bytes", "start_us", "finish_us", "delivered_bytes", "fct_us"]
    assert (f["bytes"].to_numpy() == c["bytes"]).all() and f["bytes"].dtype == np.int64
    assert list(f["start_us"]) == [0.0, 1.0, 5.0]
    assert f["finish_us"][:2].tolist() == [801.0, 3.6] and np.isnan(f["finish_us"][2])
    assert f["fct_us"][:2].tolist() == pytest.approx([801.0, 2.6]) and np.isnan(f["fct_us"][2])
    assert r.summary["completed"] == 2 and r.summary["flows"] == 3


def test_flow_columns_are_read_only(tmp_path, small):
    r = _trace_run(tmp_path, small)
    with pytest.raises(ValueError):
        r.flow_columns["bytes"][0] = 1
    assert r.flows["bytes"][0] == 1_000_000


def test_result_made_from_frames_keeps_them():
    flows = pd.DataFrame({"id": [0], "fct_us": [1.0]})
    series = pd.DataFrame({"t_us": [0.0], "bytes": [5], "goodput": [0.5]})
    r = Result({"fabric": "esn"}, flows, series, {}, "")
    assert r.flows is flows and r.series is series and r.fabric == "esn"
    with pytest.raises(AttributeError, match="flow_columns"):
        r.flow_columns
    assert Result({}, flows, None, {}, "").series is None


def test_series_frame_built_when_read(small):
    small["metrics"] = {"time_series": "10us"}
    r = photonet.run(small)
    s = r.series
    assert list(s.columns) == ["t_us", "bytes", "goodput"]
    assert s["t_us"][1] == pytest.approx(10.0)
    assert s["bytes"].sum() == pytest.approx(r.summary["delivered_bytes"], rel=1e-9)
    # goodput = bytes / (N * R * bin): 16 hosts at 10 Gbps, 10 us bins.
    cap = 16 * 10e9 * 10e-6 / 8
    assert s["goodput"].tolist() == pytest.approx((s["bytes"] / cap).tolist())


def _fresh_python(code: str) -> str:
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=300)
    assert p.returncode == 0, p.stderr
    return p.stdout.strip()


def test_run_and_bench_import_neither_pandas_nor_matplotlib():
    out = _fresh_python(
        "import sys, photonet\n"
        "from photonet import bench\n"
        "sc = bench.scenario('baldur-baldur-paper')\n"
        "r = photonet.run({'topology': {'racks': 4, 'servers_per_rack': 2}, 'stop': {'flows': 200}})\n"
        "n = len(r.flow_columns['id'])\n"
        "before = sorted(m for m in ('pandas', 'matplotlib') if m in sys.modules)\n"
        "f = r.flows\n"
        "print(n, before, 'pandas' in sys.modules, len(f))\n"
    )
    assert out == "200 [] True 200"
