"""A figure's `reference` (another simulator's per-flow results): per-flow
comparison metrics, flows matched by (src, dst, bytes, start) after the
reference's start offset, and figures that run at some scales only."""
import pandas as pd
import pytest

from photonet import reproduce as R
from photonet.config import ConfigError
from photonet.reproduce.experiment import Metric, Reference
from photonet.reproduce.numbers import matched_flows, start_ps, vs_reference


def test_per_flow_errors_against_the_reference(tmp_path):
    ref = tmp_path / "ref.csv"
    ref.write_text("id,src,dst,bytes,start_us,fct_us\n1,0,1,100,0.000001,10.0\n2,1,2,100,0.5,20.0\n3,5,6,100,0,9.0\n")
    pt = tmp_path / "points" / "k"
    pt.mkdir(parents=True)
    # Ours: flow (0,1) 1 % slow, flow (1,2) 5 % fast; (2,3) has no counterpart.
    pd.DataFrame({"id": [0, 1, 2], "src": [0, 1, 2], "dst": [1, 2, 3], "bytes": [100] * 3, "start_us": [0.000001, 0.5, 0.0],
                  "fct_us": [10.1, 19.0, 3.0]}).to_csv(pt / "flows.csv", index=False)
    j = matched_flows(tmp_path, "k", Reference(ref))
    assert len(j) == 2
    m = lambda key: vs_reference(tmp_path, "k", Reference(ref), Metric("e", "reference", key))  # noqa: E731
    assert m("max_rel_err") == pytest.approx(0.05)
    assert m("mean_rel_err") == pytest.approx(0.03)
    # A reference whose clock starts 1 s later matches once its offset is taken off.
    ref.write_text("src,dst,bytes,start_us,fct_us\n0,1,100,1000000.000001,10.0\n1,2,100,1000000.5,20.0\n")
    assert len(matched_flows(tmp_path, "k", Reference(ref))) == 0
    assert len(matched_flows(tmp_path, "k", Reference(ref, "later", 1e6))) == 2


def test_reference_starts_are_converted_in_decimal():
    # 0.01 ps halves round to even, as the traces made from these files do.
    assert start_ps("1000000.79343441", 1000000) == 793434
    assert start_ps("1000000.00000050", 1e6) == 0 and start_ps("1000000.00000150", 1e6) == 2
    assert start_ps("12.345678") == 12345678


def test_the_htsim_experiment_loads_and_runs_its_small_cases_at_quick_scale():
    paper = R.load_paper("htsim")
    for f in paper.figures:
        assert f.reference is not None and f.reference.flows.is_file() and f.reference.label == "htsim"
        assert {p["kind"] for p in f.panels} == {"cdf", "scatter"}
    figs, fps = R.build_points(paper, "quick")
    assert sorted(f.id for f in figs) == ["incast128", "perm128"]  # the others: scales = ["full"]
    assert all(fp.key and fp.reference for fp in fps)


def test_the_yaps_reference_takes_off_its_1_s_offset():
    paper = R.load_paper("yaps")
    assert {f.reference.start_offset_us for f in paper.figures} == {1e6}


def test_a_bad_reference_is_named(tmp_path):
    root = tmp_path / "experiments"
    d = root / "x"
    d.mkdir(parents=True)
    (d / "experiment.toml").write_text('[scales.full]\nset = {}\n[scales.quick]\nset = {}\n'
                                       '[metrics.e]\nreference = "max_rel_err"\n')
    head = 'fabric = "ideal"\n[reproduce]\nx = ["a"]\nx_set = [{}]\nseries = [{label = "I", fabric = "ideal"}]\n'
    (d / "fig01_a.toml").write_text(head + 'reference = { flows = "nope.csv" }\npanels = [{kind = "cdf"}]\n')
    with pytest.raises(ConfigError, match=r"reference: `flows` = 'nope.csv' is not a file"):
        R.load_paper("x", root)
    (d / "bad.csv").write_text("bytes,fct_us\n1,2\n")
    (d / "fig01_a.toml").write_text(head + 'reference = { flows = "bad.csv" }\npanels = [{kind = "cdf"}]\n')
    with pytest.raises(ConfigError, match=r"lacks the column\(s\) src, dst, start_us"):
        R.load_paper("x", root)
    (d / "ok.csv").write_text("src,dst,bytes,start_us,fct_us\n0,1,1,0,2\n")
    for bad, words in (('{ flows = "ok.csv", start_offset_us = -1 }', r"`start_offset_us` = -1 must be a number of µs >= 0"),
                       ('{ flows = "ok.csv", colour = "red" }', r"colour"),
                       ('{ label = "x" }', r"`flows` is missing")):
        (d / "fig01_a.toml").write_text(head + f'reference = {bad}\npanels = [{{kind = "cdf"}}]\n')
        with pytest.raises(ConfigError, match=words):
            R.load_paper("x", root)
    (d / "fig01_a.toml").write_text(head + 'panels = [{kind = "scatter"}]\n')
    with pytest.raises(ConfigError, match=r"scatter.*set the figure's `reference`"):
        R.load_paper("x", root)
    (d / "fig01_a.toml").write_text(head + 'panels = [{kind = "cdf"}]\n')
    (d / "experiment.toml").write_text('[scales.full]\nset = {}\n[scales.quick]\nset = {}\nfigures = ["fig01"]\n')
    with pytest.raises(ConfigError, match=r"`figures` is not a key here.*`scales` = \[\"full\"\]"):
        R.load_paper("x", root)
