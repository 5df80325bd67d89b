"""Hostile input, round 2 (issue 27): the reproducers that touch input files,
TOML and the command line, shrunk. Each failed before its fix."""
import os
from pathlib import Path

import pytest

import photonet
from photonet import sweep
from photonet.config import ConfigError, parse_value
from photonet.io import OutputError

from conftest import TINY, photonet_cli


def no_bug(p):
    assert "a bug in photonet" not in p.stderr and "Traceback" not in p.stderr, p.stderr
    return p


@pytest.mark.parametrize("key", ["sizes", "trace"])
def test_a_device_as_an_input_file_is_refused_not_read(tmp_path, key):
    cfg = tmp_path / "c.toml"
    if key == "sizes":
        cfg.write_text(TINY.replace('dist = "pareto"\nshape = 1.5\nmean = "20KB"', 'dist = "cdf"\nfile = "/dev/zero"'))
    else:
        cfg.write_text(TINY + '[workload.pattern]\nkind = "trace"\nfile = "/dev/zero"\n')
    p = no_bug(photonet_cli("validate", cfg))
    assert p.returncode == 2 and "/dev/zero" in p.stderr and "not a regular file" in p.stderr, p.stderr


def test_a_fifo_as_an_input_file_does_not_block(tmp_path):
    os.mkfifo(tmp_path / "f.cdf")
    with pytest.raises(ConfigError, match="not a regular file"):
        photonet.run({**photonet.config.load(TINY)[0], "workload": {"sizes": {"dist": "cdf", "file": str(tmp_path / "f.cdf")}}})


def test_a_device_or_huge_config_is_refused(tmp_path):
    p = no_bug(photonet_cli("validate", "/dev/urandom"))
    assert p.returncode == 2 and "not a regular file" in p.stderr
    big = tmp_path / "big.toml"
    with open(big, "wb") as f:
        f.truncate(photonet.config.MAX_CONFIG_BYTES + 1)
    p = no_bug(photonet_cli("validate", big))
    assert p.returncode == 2 and "is over" in p.stderr, p.stderr


def test_toml_nested_too_deeply_is_a_config_error(tmp_path):
    deep = tmp_path / "deep.toml"
    deep.write_text("a = " + "[" * 100_000)
    p = no_bug(photonet_cli("validate", deep))
    assert p.returncode == 2 and "nested too deeply" in p.stderr
    with pytest.raises(ConfigError, match="nested too deeply"):
        photonet.config.load("a = " + "[" * 100_000 + "\n")


def test_out_through_a_symlink_loop_is_an_output_error(tmp_path, cfg):
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    p = no_bug(photonet_cli("run", cfg, "--out", tmp_path / "loop" / "x"))
    assert p.returncode == 2 and "symbolic links" in p.stderr
    r = photonet.run(cfg)
    with pytest.raises(OutputError, match="symbolic links"):
        r.write(tmp_path / "loop" / "y")


def test_sweep_point_with_a_foreign_points_file_names_it(tmp_path):
    f = tmp_path / "points.json"
    f.write_text("{}")
    p = no_bug(photonet_cli("sweep-point", f, "0"))
    assert p.returncode == 2 and "not a sweep's points file" in p.stderr
    with pytest.raises(ConfigError):
        sweep.read_points_file(f)


def test_set_values_spanning_lines_are_refused():
    for bad in ("1\nseed=2", "1\rseed=2"):
        with pytest.raises(ConfigError, match="several lines"):
            parse_value(bad)
    assert parse_value("[1, 2]") == [1, 2] and parse_value("esn") == "esn"


@pytest.mark.parametrize("args,msg", [
    (["--flows", "0"], "--flows 0: must be at least 1"),
    (["--loads", ""], "no load given"),
    (["--loads", "0.1,0.1"], "given more than once"),
    (["--fabrics", ""], "no fabric given"),
    (["--fabrics", "esn,esn"], "given more than once"),
])
def test_compare_empty_or_repeated_choices_are_errors(tmp_path, args, msg):
    p = no_bug(photonet_cli("compare", *args, "--out", tmp_path / "c"))
    assert p.returncode == 2 and msg in p.stderr, p.stderr
    assert not (tmp_path / "c" / "table.csv").exists()


@pytest.mark.parametrize("flag", ["--only", "--fabrics"])
def test_reproduce_empty_choice_is_an_error(tmp_path, flag):
    p = no_bug(photonet_cli("reproduce", "sirius", flag, "", "--out", tmp_path / "r"))
    assert p.returncode == 2 and "nothing given" in p.stderr, p.stderr
