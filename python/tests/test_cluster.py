"""Sweeps where users run them: a real local Ray cluster (started here), and a
Slurm job array run by a stand-in ``sbatch`` that executes the array tasks on
this machine, then ``--collect``."""
import json
import os
import re
import secrets
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
import pytest

from photonet import sweep

from conftest import photonet_cli



def stamps(out: Path) -> dict:
    return {d.name: (d / "summary.json").stat().st_mtime_ns for d in (out / "points").iterdir() if (d / "summary.json").exists()}


# --- Slurm ----------------------------------------------------------------------------------------------

FAKE_SBATCH = r'''#!/usr/bin/env python3
"""A stand-in for sbatch: runs every task of the script's job array here, one
after another, with SLURM_ARRAY_TASK_ID set and output where --output says."""
import os, re, subprocess, sys
script = sys.argv[-1]
text = open(script).read()
opts = dict(re.findall(r"^#SBATCH --([\w-]+)=(.*)$", text, re.M))
lo, hi = map(int, opts["array"].split("-"))
job = "4242"
print(f"Submitted batch job {job}")
for i in range(lo, hi + 1):
    log = opts["output"].replace("%A", job).replace("%a", str(i))
    with open(log, "w") as f:
        env = {**os.environ, "SLURM_ARRAY_JOB_ID": job, "SLURM_ARRAY_TASK_ID": str(i), "SLURM_JOB_ID": f"{job}_{i}"}
        rc = subprocess.run(["bash", script], stdout=f, stderr=subprocess.STDOUT, env=env).returncode
    with open(os.path.join(os.path.dirname(log), "exit-codes"), "a") as f:
        f.write(f"{i} {rc}\n")
'''


@pytest.fixture
def fake_sbatch(tmp_path):
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    s = bin_ / "sbatch"
    s.write_text(FAKE_SBATCH)
    s.chmod(s.stat().st_mode | stat.S_IEXEC)
    return bin_


def test_slurm_array_packs_points_and_collects(tmp_path, cfg, fake_sbatch):
    out = tmp_path / "sl"
    grid = ["--grid", "workload.load=0.2,0.3,0.4", "--grid", "seed=1,2"]  # 6 points
    # One point is done already (locally): it is left out of the array.
    p = photonet_cli("sweep", cfg, "--grid", "workload.load=0.2", "--grid", "seed=1", "--out", out, "--jobs", "1")
    assert p.returncode == 0, p.stderr
    done_before = stamps(out)
    p = photonet_cli("sweep", cfg, *grid, "--out", out, "--backend", "slurm", "--points-per-task", "2", "--time-limit", "45:00")
    assert p.returncode == 0, p.stderr
    script = out / "sweep.sbatch"
    text = script.read_text()
    assert "#SBATCH --array=0-2" in text  # 5 pending points, 2 per task
    assert "#SBATCH --time=01:30:00" in text  # 45 minutes per point, 2 points per task
    assert json.loads((out / "points.json").read_text())["points_per_task"] == 2
    r = subprocess.run(["sbatch", str(script)], capture_output=True, text=True,
                       env={**os.environ, "PATH": f"{fake_sbatch}{os.pathsep}{os.environ['PATH']}"}, cwd=tmp_path)
    assert r.returncode == 0 and "Submitted batch job 4242" in r.stdout, r.stderr
    codes = (out / "exit-codes").read_text().split("\n")
    assert [c for c in codes if c] == ["0 0", "1 0", "2 0"], codes
    logs = sorted(x.name for x in out.glob("slurm-4242_*.log"))
    assert logs == ["slurm-4242_0.log", "slurm-4242_1.log", "slurm-4242_2.log"]
    assert len(stamps(out)) == 6
    assert {k: v for k, v in stamps(out).items() if k in done_before} == done_before  # not rerun
    p = photonet_cli("sweep", cfg, *grid, "--out", out, "--collect")
    assert p.returncode == 0, p.stderr
    assert "6/6 points finished" in p.stderr
    t = pd.read_csv(out / "table.csv")
    assert len(t) == 6 and set(zip(t["workload.load"], t["seed"])) == {(x, s) for x in (0.2, 0.3, 0.4) for s in (1, 2)}
    assert t.groupby("workload.load")["offered_load"].mean().is_monotonic_increasing


def test_slurm_task_runs_the_rest_of_its_points_when_one_fails(tmp_path, small):
    small["stop"]["flows"] = 200
    out = tmp_path / "sl"
    pts = sweep.expand(small, {"workload.load": [0.2, 0.3, 0.4]})
    script = sweep.write_slurm(out, pts, points_per_task=3)
    assert "--array=0-0" in script.read_text()
    sweep.point_dir(out, pts[1]).write_text("in the way")  # its result cannot be written
    env = {**os.environ, "SLURM_ARRAY_TASK_ID": "0"}
    r = subprocess.run(["bash", str(script)], capture_output=True, text=True, env=env)
    assert r.returncode == 1 and pts[1].key in r.stderr and "is a file" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr
    assert sweep.is_done(out, pts[0]) and sweep.is_done(out, pts[2])


def test_slurm_time_limits():
    assert sweep.slurm_seconds("30") == 1800
    assert sweep.slurm_seconds("10:30") == 630
    assert sweep.slurm_seconds("2-03") == 2 * 86400 + 3 * 3600
    assert sweep.slurm_time(sweep.slurm_seconds("1-23:59:59") * 2) == "3-23:59:58"
    for bad in ("1h", "", "0", "-1"):
        with pytest.raises(Exception, match="time-limit"):
            sweep.slurm_seconds(bad)


# --- Ray --------------------------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def ray_cluster():
    """A one-node Ray cluster on 127.0.0.1, started (and ended) by this test:
    ``ray start --head --block`` in a process group of its own."""
    try:
        import ray  # noqa: F401
    except ImportError:
        pytest.skip(f"Ray is not installed for Python {sys.version_info.major}.{sys.version_info.minor} on {sys.platform} "
                    f"(scripts/setup installs it where PyPI has a wheel for this platform)")
    ray_bin = Path(sys.executable).parent / "ray"
    port = _free_port()
    tmp = tempfile.mkdtemp(prefix="pnray", dir="/tmp")  # short: Ray's socket paths must fit in 107 bytes
    # Token authentication, set up as Ray documents for a cluster started with
    # `ray start`: RAY_AUTH_MODE=token and the same RAY_AUTH_TOKEN for the head,
    # `ray status` and the driver (the photonet CLI, which inherits os.environ).
    # Ray >= 2.59 turns token authentication on for local clusters; older Rays
    # ignore both variables.
    auth = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32), "RAY_USAGE_STATS_ENABLED": "0"}
    saved = {k: os.environ.get(k) for k in auth}
    os.environ.update(auth)
    env = dict(os.environ)
    log = open(Path(tmp) / "head.log", "w")
    head = subprocess.Popen(
        [str(ray_bin), "start", "--head", "--block", f"--port={port}", "--node-ip-address=127.0.0.1", "--num-cpus=2",
         "--object-store-memory=100000000", "--include-dashboard=false", "--disable-usage-stats", f"--temp-dir={tmp}"],
        stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    address = f"127.0.0.1:{port}"
    try:
        deadline = time.time() + 180
        while True:
            r = subprocess.run([str(ray_bin), "status", f"--address={address}"], capture_output=True, text=True, env=env)
            if r.returncode == 0 and "CPU" in r.stdout:
                break
            if head.poll() is not None or time.time() > deadline:
                pytest.fail(f"the Ray head did not start: {(Path(tmp) / 'head.log').read_text()[-3000:]}")
            time.sleep(2)
        yield address
    finally:
        try:
            os.killpg(head.pid, signal.SIGTERM)
            head.wait(10)  # a test cluster: no state worth a slow, graceful stop
        except (ProcessLookupError, subprocess.TimeoutExpired):
            try:
                os.killpg(head.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        log.close()
        shutil.rmtree(tmp, ignore_errors=True)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def test_ray_sweep_with_a_failing_point_then_resume(tmp_path, cfg, ray_cluster):
    out = tmp_path / "ray"
    grid = ["--grid", "workload.load=0.2,0.4", "--grid", "seed=1,2"]
    args = ["sweep", cfg, *grid, "--out", out, "--backend", "ray", "--ray-address", ray_cluster]
    pts = sweep.expand(cfg, sweep.parse_grid(grid[1::2]))
    bad = next(p for p in pts if p.params == {"workload.load": 0.4, "seed": 2})
    (out / "points").mkdir(parents=True)
    sweep.point_dir(out, bad).write_text("in the way")  # this point's result cannot be written
    p = photonet_cli(*args)
    assert p.returncode == 1, p.stderr
    assert "Traceback" not in p.stderr
    assert "1 point(s) failed" in p.stderr and bad.key in p.stderr and "is a file" in p.stderr, p.stderr
    t = pd.read_csv(out / "table.csv")
    assert len(t) == 3 and (0.4, 2) not in set(zip(t["workload.load"], t["seed"]))
    first = stamps(out)
    assert len(first) == 3
    # Resume: the obstacle is gone; only the failed point runs.
    sweep.point_dir(out, bad).unlink()
    p = photonet_cli(*args)
    assert p.returncode == 0, p.stderr
    assert "4 points, 3 already done, 1 to run (ray)" in p.stderr, p.stderr
    after = stamps(out)
    assert {k: after[k] for k in first} == first and bad.key in after
    t = pd.read_csv(out / "table.csv")
    assert len(t) == 4 and set(t["key"]) == {p.key for p in pts}
    # The workers wrote with the same rules: params inside, the umask's modes.
    assert json.loads((sweep.point_dir(out, bad) / "params.json").read_text()) == bad.params


def test_one_backend_object_per_place_points_run(tmp_path, small):
    # The sweep CLI and `reproduce` dispatch through these objects: each runs
    # the pending points once and reports each as it ends.
    small["stop"]["flows"] = 100
    pts = sweep.expand(small, {"workload.load": [0.2, 0.3]})
    # A point that fails when it runs: its text made bad after validation,
    # and without its prepared run, so that it is prepared again from the text.
    pts[1].config_toml = pts[1].config_toml.replace("[workload]", "[workload]\nload = -1", 1)
    pts[1].prepared = None
    done, failed = [], []
    out = tmp_path / "local"
    o = sweep.backend("local", jobs=2).run(out, pts, on_done=lambda p, secs, s: done.append((p.key, secs, s["flows"])),
                                           on_failed=failed.append)
    assert [d[0] for d in done] == [pts[0].key] and done[0][1] >= 0 and done[0][2] == 100
    assert [f.point.key for f in failed] == [pts[1].key] and o.failures == failed and o.script is None
    # Nothing pending: nothing runs, no Slurm script is written.
    assert sweep.backend("local").run(out, pts[:1]).failures == []
    assert sweep.backend("slurm").run(out, pts[:1]).script is None
    s = sweep.backend("slurm", time_limit="10", points_per_task=2).run(tmp_path / "sl", pts)
    assert s.script.is_file() and "--array=0-0" in s.script.read_text() and len(s.pending) == 2
    with pytest.raises(sweep.ConfigError, match="'cloud'.*local, ray, slurm"):
        sweep.backend("cloud")
    with pytest.raises(sweep.ConfigError, match="--time-limit"):
        sweep.backend("slurm", time_limit="soon")
