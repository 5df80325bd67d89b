"""Hostile input and data safety on the Python side (issue 9, items 5-11 and 15):
no traceback, no lost user data, no silent nonsense."""
import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

import photonet
from photonet import ConfigError, sweep
from photonet.io import atomic_dir

from conftest import photonet_cli



def no_traceback(p):
    assert "Traceback" not in p.stderr and "Traceback" not in p.stdout, p.stderr


def ran_nothing(p):
    """The CLI refused before simulating: no summary was printed."""
    assert "goodput" not in p.stdout, p.stdout


# --- 5. --out never deletes what photonet did not write -------------------------------------------


def test_out_refuses_a_folder_of_user_files_and_keeps_them(tmp_path, cfg):
    thesis = tmp_path / "thesis"
    thesis.mkdir()
    (thesis / "thesis.tex").write_text("\\documentclass{article}")
    p = photonet_cli("run", cfg, "--out", thesis)
    assert p.returncode == 2, p.stderr
    no_traceback(p)
    ran_nothing(p)
    assert str(thesis) in p.stderr and "thesis.tex" in p.stderr and "not a photonet result" in p.stderr, p.stderr
    assert (thesis / "thesis.tex").read_text() == "\\documentclass{article}"
    assert sorted(x.name for x in tmp_path.iterdir()) == ["thesis", "tiny.toml"]


def test_out_replaces_its_own_result_and_an_empty_folder(tmp_path, cfg):
    out = tmp_path / "r"
    out.mkdir()  # empty: fine
    assert photonet_cli("run", cfg, "--out", out).returncode == 0
    first = json.loads((out / "manifest.json").read_text())["started_unix"]
    p = photonet_cli("run", cfg, "--out", out, "--set", "seed=2")  # our own result: replaced
    assert p.returncode == 0, p.stderr
    assert json.loads((out / "manifest.json").read_text())["started_unix"] != first
    assert "seed = 2" in (out / "config.toml").read_text()
    assert sorted(x.name for x in tmp_path.iterdir()) == ["r", "tiny.toml"]
    # ... but not once the user has put a file of theirs in it.
    (out / "notes.txt").write_text("mine")
    p = photonet_cli("run", cfg, "--out", out)
    assert p.returncode == 2 and "notes.txt" in p.stderr, p.stderr
    assert (out / "notes.txt").read_text() == "mine" and (out / "summary.json").exists()


def test_out_existing_file_is_refused_and_kept(tmp_path, cfg):
    f = tmp_path / "afile"
    f.write_text("precious")
    p = photonet_cli("run", cfg, "--out", f)
    assert p.returncode == 2, p.stderr
    no_traceback(p)
    ran_nothing(p)
    assert str(f) in p.stderr and "is a file" in p.stderr, p.stderr
    assert f.read_text() == "precious"
    assert sorted(x.name for x in tmp_path.iterdir()) == ["afile", "tiny.toml"]  # no .afile.old-PID


def test_api_write_refuses_user_data(tmp_path, small):
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "data.csv").write_text("1,2\n")
    r = photonet.run(small)
    with pytest.raises(ConfigError, match="data.csv"):
        r.write(tmp_path / "mine")
    assert (tmp_path / "mine" / "data.csv").read_text() == "1,2\n"
    with pytest.raises(ConfigError, match="is a file"):
        r.write(tmp_path / "mine" / "data.csv")


def test_sweep_out_refuses_a_folder_of_user_files(tmp_path, cfg):
    d = tmp_path / "paper"
    d.mkdir()
    (d / "table.csv").write_text("my,own,table\n")
    p = photonet_cli("sweep", cfg, "--grid", "seed=1,2", "--out", d)
    assert p.returncode == 2 and "table.csv" in p.stderr and "not a photonet" in p.stderr, p.stderr
    no_traceback(p)
    assert (d / "table.csv").read_text() == "my,own,table\n" and not (d / "points").exists()


# --- 6. output-path errors before simulating ---------------------------------------------------------


@pytest.mark.parametrize("what", ["dot", "under_file", "proc", "sweep_file"])
def test_bad_out_paths_are_refused_before_simulating(tmp_path, cfg, what):
    f = tmp_path / "somefile"
    f.write_text("x")
    work = tmp_path / "work"
    work.mkdir()
    (work / "keep.txt").write_text("k")
    if what == "dot":
        args, words = ["run", cfg, "--out", "."], ["."]
    elif what == "under_file":
        args, words = ["run", cfg, "--out", f / "x"], [str(f), "is a file"]
    elif what == "proc":
        args, words = ["run", cfg, "--out", "/proc/x"], ["/proc"]
    else:
        args, words = ["sweep", cfg, "--grid", "seed=1,2", "--out", f], [str(f), "is a file"]
    t0 = time.time()
    p = photonet_cli(*args, "--set", "stop.flows=2000000", cwd=work)  # would take long if it ran
    assert p.returncode == 2, (p.returncode, p.stderr)
    assert time.time() - t0 < 20
    no_traceback(p)
    ran_nothing(p)
    for w in words:
        assert w in p.stderr, p.stderr
    assert f.read_text() == "x" and (work / "keep.txt").read_text() == "k"
    assert sorted(x.name for x in work.iterdir()) == ["keep.txt"]


# --- 7. no tracebacks for bad config paths ---------------------------------------------------------------


@pytest.mark.parametrize("cmd", [["run"], ["validate"], ["sweep", "--grid", "seed=1,2"]])
def test_a_folder_as_config_is_an_error(tmp_path, cmd):
    d = tmp_path / "cfgdir"
    d.mkdir()
    p = photonet_cli(cmd[0], d, *cmd[1:], "--out" if cmd[0] != "validate" else "--set", tmp_path / "o" if cmd[0] != "validate" else "seed=1")
    assert p.returncode == 2, p.stderr
    no_traceback(p)
    assert str(d) in p.stderr and "is a folder" in p.stderr, p.stderr


def test_non_utf8_config_is_an_error(tmp_path):
    c = tmp_path / "latin1.toml"
    c.write_bytes("# caf\xe9\nseed = 1\n".encode("latin-1"))
    for cmd in ("run", "validate"):
        p = photonet_cli(cmd, c)
        assert p.returncode == 2, p.stderr
        no_traceback(p)
        assert str(c) in p.stderr and "UTF-8" in p.stderr, p.stderr


def test_missing_config_without_extension_does_not_exist(tmp_path):
    p = photonet_cli("run", "cfg/nope", cwd=tmp_path)
    assert p.returncode == 2
    no_traceback(p)
    assert "cfg/nope" in p.stderr and "does not exist" in p.stderr, p.stderr
    with pytest.raises(ConfigError, match="does not exist"):
        photonet.run(Path(tmp_path / "nope"))


def test_unexpected_errors_are_one_line_unless_debug(tmp_path, cfg, monkeypatch):
    # An internal error (here: an unwritable --out found only by the OS) is one line
    # without --debug and a traceback with it.
    from photonet import cli

    def boom(a):
        raise RuntimeError("something broke")

    monkeypatch.setattr(cli, "cmd_validate", boom)
    code = None
    with pytest.raises(SystemExit) as e:
        cli.main(["validate", str(cfg)])
    code = e.value.code
    assert code == 1
    with pytest.raises(RuntimeError):
        cli.main(["--debug", "validate", str(cfg)])


# --- 8. grids ---------------------------------------------------------------------------------------------


def test_grid_duplicate_values_are_rejected():
    for item in ("workload.load=0.1,0.1", "workload.load=0.1,1e-1", "fabric=esn,esn"):
        with pytest.raises(ConfigError, match="twice|repeat"):
            sweep.parse_grid([item])


def test_grid_repeated_key_is_an_error():
    with pytest.raises(ConfigError, match="workload.load.*more than once"):
        sweep.parse_grid(["workload.load=0.1,0.2", "workload.load=0.3"])
    with pytest.raises(ConfigError, match="workload.load.*more than once"):
        sweep.parse_grid(["workload.load=0.1,0.2", " workload.load =0.3"])


def test_grid_respects_quotes_and_brackets():
    g = sweep.parse_grid(['name="a,b",\'c,d\'', "arr=[1,2],[3,4]", "workload.load=0.1, 0.2"])
    assert g == {"name": ["a,b", "c,d"], "arr": [[1, 2], [3, 4]], "workload.load": [0.1, 0.2]}
    with pytest.raises(ConfigError, match="quote"):
        sweep.parse_grid(['name="a,b'])


def test_points_with_the_same_config_run_once_in_parallel(tmp_path, small):
    # Two grid values that give the same complete config (two spellings of a rate,
    # or keys another fabric ignores) share one point; with --jobs 2 both threads
    # must not write the same folder at once.
    small["stop"]["flows"] = 200
    pts = sweep.expand(small, {"topology.uplink_rate": ["10Gbps", "10000Mbps"], "workload.load": [0.3, 0.5]})
    assert len({p.key for p in pts}) == 2
    for _ in range(3):
        failed = sweep.run_local(tmp_path, pts, jobs=2)
        assert not failed
    t = sweep.collect(tmp_path, pts)
    assert len(t) == len(pts) and set(t["topology.uplink_rate"]) == {"10Gbps", "10000Mbps"}
    assert len(list((tmp_path / "points").iterdir())) == 2
    assert not [x for x in (tmp_path / "points").iterdir() if x.name.startswith(".")]


def test_sweep_cli_duplicate_grid_values_rejected_before_running(tmp_path, cfg):
    p = photonet_cli("sweep", cfg, "--grid", "workload.load=0.1,1e-1", "--out", tmp_path / "s", "--jobs", "2")
    assert p.returncode == 2 and "workload.load" in p.stderr and "1e-1" in p.stderr, p.stderr
    no_traceback(p)
    assert not (tmp_path / "s").exists()


# --- 9. a sweep point is written in one atomic step ---------------------------------------------------


def test_sweep_point_appears_with_its_params(tmp_path, small, monkeypatch):
    small["stop"]["flows"] = 200
    (p,) = sweep.expand(small, {"workload.load": [0.3]})
    pd_ = sweep.point_dir(tmp_path, p)
    seen = []

    def spy(real):
        def renamed(src, dst, *a, **k):
            real(src, dst, *a, **k)
            if Path(dst) == pd_:
                seen.append(sorted(x.name for x in pd_.iterdir()))
                raise KeyboardInterrupt("killed right after the point folder appeared")
        return renamed

    monkeypatch.setattr(os, "replace", spy(os.replace))
    monkeypatch.setattr(os, "rename", spy(os.rename))
    with pytest.raises(KeyboardInterrupt):
        sweep.run_point(tmp_path, p)
    monkeypatch.undo()
    assert seen and "params.json" in seen[0] and "summary.json" in seen[0]
    t = sweep.collect(tmp_path)
    assert list(t["workload.load"]) == [0.3]


# --- 10. stale temporary folders ----------------------------------------------------------------------


KILL_DURING_WRITE = r"""
import os, sys
from pathlib import Path
from photonet.io import atomic_dir

def fill(tmp):
    (tmp / "summary.json").write_text("{}")
    print(tmp, flush=True)
    os._exit(9)   # killed half-way

atomic_dir(Path(sys.argv[1]), fill)
"""


def test_stale_temporary_folders_of_a_killed_writer_are_removed(tmp_path, cfg):
    out = tmp_path / "sp"
    p = subprocess.run([sys.executable, "-c", KILL_DURING_WRITE, str(out)], capture_output=True, text=True)
    assert p.returncode == 9
    stale = Path(p.stdout.strip())
    assert stale.exists() and stale.name.startswith(".sp.") and stale.name.endswith(".tmp")
    # A user's own folder that only looks like ours is never touched.
    lookalike = tmp_path / ".sp.mine.tmp"
    lookalike.mkdir()
    (lookalike / "x").write_text("mine")
    p = photonet_cli("run", cfg, "--out", out)
    assert p.returncode == 0, p.stderr
    assert not stale.exists()
    assert (lookalike / "x").read_text() == "mine"
    assert sorted(x.name for x in tmp_path.iterdir()) == [".sp.mine.tmp", "sp", "tiny.toml"]


def test_a_live_writers_temporary_folder_is_left_alone(tmp_path):
    import threading

    out = tmp_path / "sp"
    inside = threading.Event()
    release = threading.Event()

    def slow(tmp):
        (tmp / "summary.json").write_text("{}")
        inside.set()
        release.wait(10)

    def fast(tmp):
        (tmp / "summary.json").write_text("{}")

    t = threading.Thread(target=atomic_dir, args=(tmp_path / "sp", slow))
    t.start()
    assert inside.wait(10)
    live = [x for x in tmp_path.iterdir() if x.name.startswith(".sp.")]
    assert len(live) == 1
    atomic_dir(tmp_path / "other", fast)
    atomic_dir(out.with_name("sp2"), fast)
    assert live[0].exists()
    release.set()
    t.join()
    assert (out / "summary.json").exists()


def test_sweep_removes_stale_point_temporaries(tmp_path, small):
    small["stop"]["flows"] = 200
    pts = sweep.expand(small, {"workload.load": [0.3]})
    p = subprocess.run([sys.executable, "-c", KILL_DURING_WRITE, str(sweep.point_dir(tmp_path, pts[0]))], capture_output=True, text=True)
    stale = Path(p.stdout.strip())
    assert stale.exists()
    assert not sweep.run_local(tmp_path, pts, jobs=1)
    assert not stale.exists()


# --- 11. the umask is honoured ------------------------------------------------------------------------


def test_results_honour_the_umask(tmp_path, cfg):
    def modes(root):
        return {x.relative_to(root).as_posix(): stat.S_IMODE(x.stat().st_mode) for x in [root, *root.rglob("*")]}

    old = os.umask(0o022)
    try:
        p = subprocess.run([sys.executable, "-m", "photonet.cli", "run", str(cfg), "--out", str(tmp_path / "r"), "--quiet"],
                           capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
        p = subprocess.run([sys.executable, "-m", "photonet.cli", "sweep", str(cfg), "--grid", "seed=1,2", "--out", str(tmp_path / "s")],
                           capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
    finally:
        os.umask(old)
    for root in (tmp_path / "r", tmp_path / "s"):
        for name, mode in modes(root).items():
            want = 0o755 if (root / name).is_dir() else 0o644
            assert mode == want, (root, name, oct(mode))
    os.umask(0o077)
    try:
        p = subprocess.run([sys.executable, "-m", "photonet.cli", "run", str(cfg), "--out", str(tmp_path / "q"), "--quiet"],
                           capture_output=True, text=True)
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "q").stat().st_mode) == 0o700
    assert stat.S_IMODE((tmp_path / "q" / "summary.json").stat().st_mode) == 0o600


# --- 15. numpy scalars and None in the Python API -------------------------------------------------------


def test_numpy_scalars_work(small):
    np = pytest.importorskip("numpy")
    small["topology"]["racks"] = np.int64(4)
    small["workload"]["load"] = np.float32(0.5)
    small["stop"]["flows"] = np.uint16(300)
    small["stop"]["drain"] = np.bool_(False)
    r = photonet.run(small, overrides={"seed": np.int32(7)})
    assert r.summary["flows"] == 300
    assert "seed = 7" in r.config_toml and "racks = 4" in r.config_toml
    pts = sweep.expand(small, {"workload.load": list(np.array([0.2, 0.4]))})
    assert len(pts) == 2


def test_none_and_odd_values_are_config_errors_naming_the_key(small):
    small["workload"]["load"] = None
    with pytest.raises(ConfigError, match=r"workload\.load.*None"):
        photonet.run(small)
    small["workload"]["load"] = 0.5
    with pytest.raises(ConfigError, match=r"stop\.flows.*None"):
        photonet.run(small, overrides={"stop.flows": None})
    with pytest.raises(ConfigError, match=r"seed.*set"):
        photonet.run(small, overrides={"seed": {1, 2}})


# --- --check ------------------------------------------------------------------------------------------


def test_check_switch_turns_on_invariant_checks(tmp_path, cfg):
    p = photonet_cli("run", cfg, "--out", tmp_path / "r", "--check")
    assert p.returncode == 0, p.stderr
    assert "check_invariants = true" in (tmp_path / "r" / "config.toml").read_text()
    p = photonet_cli("sweep", cfg, "--grid", "seed=1,2", "--out", tmp_path / "s", "--check", "--jobs", "1")
    assert p.returncode == 0, p.stderr
    for d in (tmp_path / "s" / "points").iterdir():
        assert "check_invariants = true" in (d / "config.toml").read_text()



def test_check_switch_on_reproduce(tmp_path, monkeypatch):
    import photonet.reproduce as R
    from photonet import cli

    seen = {}

    def fake(name, out, **kw):
        seen.update(kw)
        raise ConfigError("stopped here")

    monkeypatch.setattr(R, "reproduce", fake)
    with pytest.raises(SystemExit) as e:
        cli.main(["reproduce", "sirius", "--check", "--out", str(tmp_path / "r"), "--set", "seed=3"])
    assert e.value.code == 2
    assert seen["overrides"] == ["seed=3", "metrics.check_invariants=true"]


def test_collect_where_nothing_ran_writes_nothing(tmp_path, cfg):
    p = photonet_cli("sweep", cfg, "--grid", "seed=1,2", "--out", tmp_path / "none", "--collect")
    assert p.returncode == 2 and "holds no sweep points" in p.stderr, p.stderr
    no_traceback(p)
    assert not (tmp_path / "none").exists()
