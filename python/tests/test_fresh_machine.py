"""A fresh machine, anywhere: photonet installed with nothing beside it finds
its standard workloads; files next to a config are found by every command;
the sweep store never answers with a result made by another build or from
other inputs; errors instead of NaN; progress without a terminal."""
import io
import json
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

import photonet
from photonet import config as pconfig
from photonet import provenance, sweep
from photonet.progress import CountLines, RunLines, duration_us

from conftest import REPO, TINY, photonet_cli

SHARED_README = REPO.parent / "shared" / "workloads" / "README.md"


def test_the_standard_workloads_ship_in_the_package_unchanged():
    pkg = pconfig.package_workloads()
    cdfs = sorted(p.name for p in pkg.glob("*.cdf"))
    assert len(cdfs) == 10 and "meta_hadoop.cdf" in cdfs and (pkg / "README.md").is_file()
    # The provenance table names every file shipped.
    readme = (pkg / "README.md").read_text()
    assert all(f"`{name}`" in readme for name in cdfs)
    if SHARED_README.is_file():  # copied unchanged from shared/workloads
        for name in [*cdfs, "README.md"]:
            assert (pkg / name).read_bytes() == (SHARED_README.parent / name).read_bytes(), name


def test_search_order_is_env_then_package_and_nothing_beside_the_repo(tmp_path, monkeypatch):
    monkeypatch.delenv("PHOTONET_WORKLOADS", raising=False)
    assert pconfig.workload_search_path() == [str(pconfig.package_workloads().resolve())]
    monkeypatch.setenv("PHOTONET_WORKLOADS", f"{tmp_path / 'a'}{os.pathsep}{tmp_path / 'b'}")
    assert pconfig.workload_search_path() == [str(tmp_path / "a"), str(tmp_path / "b"), str(pconfig.package_workloads().resolve())]


def test_a_file_next_to_the_config_wins_and_the_not_found_error_names_the_search(tmp_path, monkeypatch):
    (tmp_path / "env").mkdir()
    monkeypatch.setenv("PHOTONET_WORKLOADS", str(tmp_path / "env"))
    (tmp_path / "cfg").mkdir()
    shutil.copy(pconfig.package_workloads() / "websearch.cdf", tmp_path / "cfg" / "meta_hadoop.cdf")
    cfg = tmp_path / "cfg" / "c.toml"
    cfg.write_text(TINY.replace('dist = "pareto"\nshape = 1.5\nmean = "20KB"', 'dist = "cdf"\nfile = "meta_hadoop.cdf"'))
    text, base = pconfig.complete(cfg)
    (key, path), = photonet._core.input_files(text, str(base), pconfig.workload_search_path())
    assert key == "workload.sizes.file" and Path(path) == tmp_path / "cfg" / "meta_hadoop.cdf"
    cfg.write_text(cfg.read_text().replace("meta_hadoop.cdf", "no_such.cdf"))
    with pytest.raises(pconfig.ConfigError) as e:
        pconfig.complete(cfg)
    msg = str(e.value)
    assert "workload.sizes.file" in msg and str(tmp_path / "cfg") in msg and str(tmp_path / "env") in msg
    assert str(pconfig.package_workloads()) in msg


def test_installed_with_nothing_beside_it_compare_runs(tmp_path):
    """The README's main job from a wheel of this repository, installed in a
    new virtualenv under a temporary folder (no repository, no shared/ beside
    it), run from an empty folder."""
    wheels = tmp_path / "wheels"
    r = subprocess.run([str(Path(sys.executable).parent / "maturin"), "build", "--release", "--locked", "--quiet", "-o", str(wheels)],
                       cwd=REPO, capture_output=True, text=True)
    if r.returncode != 0 and "command not found" in r.stderr:
        pytest.skip("maturin is not installed")
    assert r.returncode == 0, r.stderr[-3000:]
    (wheel,) = wheels.glob("photonet-*.whl")
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True, system_site_packages=False).create(env_dir)
    py = env_dir / "bin" / "python"
    r = subprocess.run([str(py), "-m", "pip", "install", "-q", "-c", str(REPO / "requirements" / "lock.txt"), str(wheel)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-3000:]
    work = tmp_path / "empty"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PHOTONET_WORKLOADS", "PYTHONPATH", "VIRTUAL_ENV")}
    r = subprocess.run([str(env_dir / "bin" / "photonet"), "compare", "--flows", "100", "--loads", "0.5", "--fabrics", "esn,sirius",
                        "--out", "c"], cwd=work, capture_output=True, text=True, env={**env, "COLUMNS": "200"})
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    table = (work / "c" / "table.csv").read_text()
    assert table.count("\n") == 3  # a header and two points
    man = json.loads(next((work / "c" / "points").glob("*/manifest.json")).read_text())
    assert man["inputs"]["workload.sizes.file"]["path"].startswith(str(env_dir))  # the package's copy


# --- sweep and compare resolve files next to the config -----------------------------------------------


def _cdf_config(folder: Path, cdf_text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "mine.cdf").write_text(cdf_text)
    cfg = folder / "c.toml"
    cfg.write_text(TINY.replace('dist = "pareto"\nshape = 1.5\nmean = "20KB"', 'dist = "cdf"\nfile = "mine.cdf"').replace("flows = 300", "flows = 100"))
    return cfg


def test_sweep_and_compare_find_a_cdf_next_to_the_config(tmp_path):
    cfg = _cdf_config(tmp_path / "here", "1000 0\n2000 1\n")
    elsewhere = tmp_path / "run"
    elsewhere.mkdir()
    p = photonet_cli("sweep", cfg, "--grid", "workload.load=0.3", "--out", tmp_path / "sw", cwd=elsewhere)
    assert p.returncode == 0, p.stderr
    scen = tmp_path / "here" / "scen.toml"
    scen.write_text(cfg.read_text() + "\n[compare]\nloads = [0.3]\nfabrics = [\"ideal\"]\n")
    p = photonet_cli("compare", "--scenario", scen, "--out", tmp_path / "cmp", cwd=elsewhere)
    assert p.returncode == 0, p.stderr


# --- a store that cannot mislead --------------------------------------------------------------------------


def test_an_edited_input_file_gives_a_new_key_and_is_recomputed(tmp_path):
    cfg = _cdf_config(tmp_path / "c", "1000 0\n2000 1\n")
    (a,) = sweep.expand(cfg, {"workload.load": [0.3]})
    assert a.inputs["workload.sizes.file"]["sha256"] == provenance.file_sha256(tmp_path / "c" / "mine.cdf")
    out = tmp_path / "sw"
    assert sweep.run_local(out, [a]) == []
    (tmp_path / "c" / "mine.cdf").write_text("1000 0\n50000 1\n")  # same path, other contents
    (b,) = sweep.expand(cfg, {"workload.load": [0.3]})
    assert b.key != a.key and not sweep.is_done(out, b)
    assert sweep.run_local(out, [b]) == []
    mean = lambda p: json.loads((sweep.point_dir(out, p) / "summary.json").read_text())["load"]["mean_bytes_realised"]  # noqa: E731
    assert mean(a) < 2000 < mean(b)


def _pretend_other_build(out: Path, p) -> None:
    m = sweep.point_dir(out, p) / "manifest.json"
    d = json.loads(m.read_text())
    d.update(core_sha256="0" * 64, git_commit="f" * 40, git_dirty=True)
    m.write_text(json.dumps(d))


def test_a_point_of_another_build_is_recomputed_unless_accepted(tmp_path, cfg):
    out = tmp_path / "sw"
    args = ("sweep", cfg, "--grid", "workload.load=0.2,0.3", "--out", out)
    assert photonet_cli(*args).returncode == 0
    pts = sweep.expand(cfg, {"workload.load": [0.2, 0.3]})
    me = provenance.build_info()
    man = json.loads((sweep.point_dir(out, pts[0]) / "manifest.json").read_text())
    assert {k: man[k] for k in me} == me and set(me) == {"photonet_version", "git_commit", "git_dirty", "core_sha256"}
    _pretend_other_build(out, pts[0])
    assert sweep.point_state(out, pts[0]) == "stale" and sweep.point_state(out, pts[1]) == "done"
    p = photonet_cli(*args, "--collect")
    assert p.returncode == 0 and "1 point(s)" in p.stderr and "commit ffffffff (dirty)" in p.stderr, p.stderr
    assert "1/2 points finished" in p.stderr  # the stale one is not collected
    p = photonet_cli(*args, "--accept-old", "--collect")
    assert p.returncode == 0 and "2/2 points finished" in p.stderr, p.stderr
    p = photonet_cli(*args)
    assert p.returncode == 0 and "recomputing" in p.stderr and "1 already done, 1 to run" in p.stderr, p.stderr
    assert sweep.point_state(out, pts[0]) == "done"


def test_collect_matching_no_point_is_an_error(tmp_path, cfg):
    out = tmp_path / "sw"
    assert photonet_cli("sweep", cfg, "--grid", "workload.load=0.2", "--out", out).returncode == 0
    p = photonet_cli("sweep", cfg, "--grid", "workload.load=0.2", "--set", "seed=7", "--out", out, "--collect")
    assert p.returncode != 0 and "no finished point of this grid" in p.stderr and "--set" in p.stderr, p.stderr
    assert "Traceback" not in p.stderr
    assert not (out / "table.csv").exists() or (out / "table.csv").read_text().count("\n") == 2  # the earlier table stands


def test_run_default_out_never_replaces_a_result_of_another_config(tmp_path, cfg):
    first = photonet_cli("run", cfg, cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    res = tmp_path / "results"
    before = (res / "tiny" / "summary.json").read_text()
    again = photonet_cli("run", cfg, cwd=tmp_path)  # the same config: the same folder
    assert again.returncode == 0 and sorted(p.name for p in res.iterdir()) == ["tiny"]
    other = photonet_cli("run", cfg, "--set", "workload.load=0.3", cwd=tmp_path)
    assert other.returncode == 0, other.stderr
    names = sorted(p.name for p in res.iterdir())
    assert len(names) == 2 and names[0] == "tiny" and names[1].startswith("tiny-"), names
    assert (res / "tiny" / "summary.json").read_text() == before
    assert "different config" in other.stderr and names[1] in other.stderr


# --- errors instead of NaN ---------------------------------------------------------------------------------


def test_unknown_size_class_or_statistic_is_an_error(small):
    r = photonet.run(small, overrides={"stop.flows": 200})
    assert r.fct("all", "p99_us") > 0
    with pytest.raises(KeyError, match="size class '<1MB' is not in this result.*'all'"):
        r.fct("<1MB")
    with pytest.raises(KeyError, match="statistic 'p99' is not known.*p99_us"):
        r.fct("all", "p99")


# --- progress without a terminal ---------------------------------------------------------------------------


def test_progress_lines_without_a_terminal(cfg):
    p = subprocess.run([sys.executable, "-m", "photonet.cli", "run", str(cfg), "--no-write", "--set", "stop.flows=20000"],
                       capture_output=True, text=True, env={**os.environ, "PHOTONET_PROGRESS_SECONDS": "0"})
    assert p.returncode == 0, p.stderr
    lines = [x for x in p.stderr.splitlines() if x.startswith("run esn: t = ")]
    assert lines and "flows arrived" in lines[-1] and "sim s/wall s" in lines[-1] and "%)" in lines[-1], p.stderr[-2000:]


def test_progress_line_arithmetic():
    t = [100.0]
    buf = io.StringIO()
    lines = RunLines("run x", 1000, 2000.0, stream=buf, interval=5, clock=lambda: t[0])
    lines(10.0, 100, 50, 1)  # too soon: nothing
    t[0] = 110.0
    lines(1000.0, 200, 150, 2)
    assert buf.getvalue() == "run x: t = 1,000.0 µs (50%), 200 flows arrived, 150 done, wall 10.0 s, 0.0001 sim s/wall s\n"
    assert duration_us("2ms") == 2000.0 and duration_us("1.5us") == 1.5 and duration_us(None) is None
    buf = io.StringIO()
    c = CountLines("compare", stream=buf, interval=60, clock=lambda: t[0])
    c(1, 3)
    c(3, 3)  # the last point always prints
    assert buf.getvalue() == "compare: 3/3 points done, wall 0.0 s\n"
