"""A figure's `reference_flows` (another simulator's per-flow results):
per-flow comparison metrics, flows matched by (src, dst, bytes, start), and a
scale that names the figures it runs."""
from pathlib import Path

import pandas as pd
import pytest

from photonet import reproduce as R
from photonet.config import ConfigError
from photonet.reproduce.experiment import Metric
from photonet.reproduce.numbers import matched_flows, vs_reference


def test_per_flow_errors_against_the_reference(tmp_path):
    ref = tmp_path / "ref.csv"
    ref.write_text("id,src,dst,bytes,start_us,fct_us\n1,0,1,100,0.000001,10.0\n2,1,2,100,0.5,20.0\n3,5,6,100,0,9.0\n")
    pt = tmp_path / "points" / "k"
    pt.mkdir(parents=True)
    # Ours: flow (0,1) 1 % slow, flow (1,2) 5 % fast; (2,3) has no counterpart.
    pd.DataFrame({"id": [0, 1, 2], "src": [0, 1, 2], "dst": [1, 2, 3], "bytes": [100] * 3, "start_us": [0.000001, 0.5, 0.0],
                  "fct_us": [10.1, 19.0, 3.0]}).to_csv(pt / "flows.csv", index=False)
    j = matched_flows(tmp_path, "k", ref)
    assert len(j) == 2
    m = lambda key: vs_reference(tmp_path, "k", ref, Metric("e", "reference", key))  # noqa: E731
    assert m("max_rel_err") == pytest.approx(0.05)
    assert m("mean_rel_err") == pytest.approx(0.03)


def test_the_htsim_experiment_loads_and_its_quick_scale_names_its_figures():
    paper = R.load_paper("htsim")
    assert paper.scales["quick"]["figures"] == ["perm128", "incast128"]
    for f in paper.figures:
        assert f.reference is not None and f.reference.is_file()
        assert {p["kind"] for p in f.panels} == {"reference_cdf", "reference_scatter"}
    figs, fps = R.build_points(paper, "quick", only=paper.scales["quick"]["figures"])
    assert sorted(f.id for f in figs) == ["incast128", "perm128"]  # file order
    assert all(fp.key and fp.reference for fp in fps)


def test_a_missing_reference_file_is_named(tmp_path):
    root = tmp_path / "experiments"
    d = root / "x"
    d.mkdir(parents=True)
    (d / "experiment.toml").write_text('[scales.full]\nset = {}\n[scales.quick]\nset = {}\nfigures = ["fig01"]\n'
                                       '[metrics.e]\nreference = "max_rel_err"\n')
    (d / "fig01_a.toml").write_text('fabric = "ideal"\n[reproduce]\nx = ["a"]\nx_set = [{}]\nreference_flows = "nope.csv"\n'
                                    'series = [{label = "I", fabric = "ideal"}]\npanels = [{kind = "reference_cdf"}]\n')
    with pytest.raises(ConfigError, match=r"reference_flows.*nope.csv.*is not a file"):
        R.load_paper("x", root)
    (d / "fig01_a.toml").write_text('fabric = "ideal"\n[reproduce]\nx = ["a"]\nx_set = [{}]\n'
                                    'series = [{label = "I", fabric = "ideal"}]\npanels = [{kind = "reference_scatter"}]\n')
    with pytest.raises(ConfigError, match=r"reference_scatter.*needs the figure's `reference_flows`"):
        R.load_paper("x", root)
    (d / "fig01_a.toml").write_text('fabric = "ideal"\n[reproduce]\nx = ["a"]\nx_set = [{}]\n'
                                    'series = [{label = "I", fabric = "ideal"}]\npanels = [{kind = "cdf"}]\n')
    (d / "experiment.toml").write_text('[scales.full]\nset = {}\n[scales.quick]\nset = {}\nfigures = ["fig09"]\n')
    with pytest.raises(ConfigError, match=r"figures.*fig09"):
        R.load_paper("x", root)
