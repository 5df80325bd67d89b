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


# --- flows.csv without pandas: the core's CSV writer against pandas' to_csv ---

SPECIAL = [0.0, -0.0, 1.0, 801.0, 3.6, 0.1 + 0.2, 1e-4, 9.9999e-5, 1e-5, 0.00012, 1e15, 9999999999999998.0, 1e16, 1.5e16,
           123456789012345680.0, 1e22, 5e-324, 2.2250738585072014e-308, 1.7976931348623157e308, -1.5e-7, 2.5e-10,
           float("nan"), float("inf"), float("-inf"), 123.456, 1 / 3, 2**53, 2**53 + 2.0, 0.5, 1e100, -1e-100,
           1417370865764593.25]  # an exact tie between two 17-digit strings
# Powers of two and their odd multiples: exact decimals, many of them ties.
SPECIAL += [m * 2.0**k for k in range(-80, 80) for m in (1, 3, 5, 7, 11, 1001, 2**52 - 1, 2**53 - 1)]


def _random_floats(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    bits = rng.integers(0, 2**64, size=n, dtype=np.uint64).view(np.float64)  # every exponent, subnormals, NaN, inf
    scaled = rng.standard_normal(n) * 10.0 ** rng.integers(-8, 20, size=n)  # the magnitudes times take
    times = np.round(rng.uniform(0, 3e10, n)) / 1e6  # ps / 1e6, as start_us
    return np.concatenate([np.array(SPECIAL), bits, scaled, times])


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_core_csv_writer_writes_what_pandas_writes(tmp_path, seed):
    from photonet.io import atomic_write_csv

    x = _random_floats(20_000, seed)
    rng = np.random.default_rng(seed)
    n = len(x)
    cols = {
        "f": x,
        "i": rng.integers(-(2**63), 2**63 - 1, size=n, dtype=np.int64, endpoint=True),
        "u": rng.integers(0, 2**64 - 1, size=n, dtype=np.uint64, endpoint=True),
        "w": rng.integers(0, 2**32 - 1, size=n, dtype=np.uint32, endpoint=True),
        "g": x[::-1].copy(),
    }
    cols["i"][:2] = [-(2**63), 2**63 - 1]
    cols["u"][:2] = [0, 2**64 - 1]
    atomic_write_csv(tmp_path / "x.csv", list(cols), list(cols.values()))
    expected = pd.DataFrame(cols).to_csv(index=False).encode()
    got = (tmp_path / "x.csv").read_bytes()
    if got != expected:  # show the first differing line
        bad = next((a, b) for a, b in zip(got.splitlines(), expected.splitlines()) if a != b)
        pytest.fail(f"core {bad[0]!r} != pandas {bad[1]!r}")
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_flows_csv_from_the_core_columns_is_pandas_to_csv_of_the_table(tmp_path, small):
    r = _trace_run(tmp_path, small)
    assert r._flows is None  # not built: written from the core's columns
    out = r.write(tmp_path / "a")
    assert r._flows is None
    assert (out / "flows.csv").read_bytes() == r.flows.to_csv(index=False).encode()
    lines = (out / "flows.csv").read_text().splitlines()
    assert lines[0] == "id,src,dst,bytes,start_us,finish_us,delivered_bytes,fct_us"
    assert lines[1] == "0,0,5,1000000,0.0,801.0,1000000,801.0"
    assert lines[3].startswith("2,1,2,10000000,5.0,,") and lines[3].endswith(",")  # unfinished: empty times


def test_flows_csv_follows_a_table_the_caller_changed(tmp_path, small):
    r = _trace_run(tmp_path, small)
    r.flows.loc[0, "bytes"] = 7  # numeric: written by the core
    r.flows["slow"] = r.flows["fct_us"] > 100
    r.write(tmp_path / "a")
    assert (tmp_path / "a" / "flows.csv").read_text() == r.flows.to_csv(index=False)
    assert (tmp_path / "a" / "flows.csv").read_text().splitlines()[1].startswith("0,0,5,7,")


@pytest.mark.parametrize(
    "df",
    [
        pd.DataFrame({"a": np.array([0.1, 1e-5], dtype=np.float32)}),  # float32 has its own shortest digits
        pd.DataFrame({"a": [True, False]}),
        pd.DataFrame({"a": ["x", "y,z"]}),
        pd.DataFrame({"a,b": [1, 2]}),  # a name CSV must quote
        pd.DataFrame({"a": pd.array([1, None], dtype="Int64")}),
        pd.DataFrame({"a": np.array([1, 2], dtype=np.int8), "b": np.array([3, 4], dtype=np.uint16)}),
    ],
)
def test_write_frame_csv_equals_to_csv_whichever_way(tmp_path, df):
    from photonet.io import frame_csv_columns, write_frame_csv

    write_frame_csv(tmp_path / "x.csv", df)
    assert (tmp_path / "x.csv").read_bytes() == df.to_csv(index=False).encode()
    fast = frame_csv_columns(df) is not None
    assert fast == (df.columns.tolist() == ["a", "b"])  # only the plain int frame goes to the core


def test_bench_write_scenario_writes_the_result_folder(monkeypatch, capsys):
    from photonet import api, bench

    written = []
    real = api.Result.write

    def spy(self, out_dir, extra=None):
        p = real(self, out_dir, extra)
        written.append(sorted(x.name for x in p.iterdir()))
        return p

    monkeypatch.setattr(api.Result, "write", spy)
    monkeypatch.setitem(bench.PAPER_SCENARIOS, "tiny-write", {"about": "tiny", "config": {"topology": {"racks": 4, "servers_per_rack": 2}, "stop": {"flows": 100}}, "write": True})
    monkeypatch.setitem(bench.PAPER_SCENARIOS, "tiny", {"about": "tiny", "config": {"topology": {"racks": 4, "servers_per_rack": 2}, "stop": {"flows": 100}}})
    bench._worker("tiny")
    assert written == []
    bench._worker("tiny-write")
    assert written == [["config.toml", "flows.csv", "manifest.json", "summary.json"]]
    assert '"flows": 100' in capsys.readouterr().out
    assert "baldur-baldur-paper-write" in bench.available()
