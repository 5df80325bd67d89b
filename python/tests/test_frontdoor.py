"""Issue 24, the front door: results a reader understands at a glance, the
analysis API, the small CLI things, and the documentation site."""
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from conftest import REPO, photonet_cli

import photonet

TINY = {"topology": {"racks": 4, "servers_per_rack": 2, "uplinks": 2, "uplink_rate": "10Gbps"},
        "workload": {"sizes": {"dist": "pareto", "shape": 1.5, "mean": "10KB"}}, "stop": {"flows": 200}}


# ---- one colour and marker per fabric, facets, hollow flagged points

def test_every_fabric_has_a_short_label_family_and_its_own_style():
    from photonet import plots
    from photonet.compare import FAMILIES

    fabs = photonet.fabrics()
    assert all(f.short and len(f.short) <= 12 and f.family in FAMILIES for f in fabs)
    styles = [plots.style(f.name) for f in fabs]
    assert len(set(styles)) == len(fabs), "two fabrics share a colour and marker"
    for f in fabs:  # the same style whichever name a plot uses
        assert plots.style(f.label) == plots.style(f.short) == plots.style(f.name)
    assert plots.style("SIRIUS 3x11") == plots.style("sirius")  # run labels add the layout


def _captured(monkeypatch):
    from photonet import plots

    figs = []
    monkeypatch.setattr(plots, "_save", lambda fig, path: figs.append(fig) or Path(path))
    return figs


def test_compare_plots_facet_by_family_legend_outside_flagged_hollow(monkeypatch, tmp_path):
    from photonet import plots
    from photonet.compare import write_outputs

    rows = []
    for name, frac in (("esn", 0.0), ("esn_osub", 0.0), ("mordia", 0.3), ("ideal", 0.0)):
        for load in (0.2, 0.8):
            rows.append({"fabric": name, "fabric_name": name, "load": load, "flows": 1000, "completed": int(1000 * (1 - frac)),
                         "offered_load": load, "goodput_steady": load, "goodput": load, "load_basis": "realised",
                         "fct<10KB_p99_us": 10.0, "fct<10KB_censored_p99_us": 12.0, "fct<10KB_unfinished": 1})
    figs = _captured(monkeypatch)
    write_outputs(tmp_path, pd.DataFrame(rows), "<10KB")
    assert len(figs) == 2
    fig = figs[0]
    axes = [a for a in fig.axes if a.get_visible()]
    assert sorted(a.get_title() for a in axes) == ["circuit", "electrical"]  # the ideal is a bound in each, not a facet
    for ax in axes:
        leg = ax.get_legend()
        # The legend sits below its axis, outside the data.
        assert leg is not None and leg.get_bbox_to_anchor().y1 <= ax.get_window_extent().y0 + 1
        assert any("bound" in t.get_text() for t in leg.get_texts())
    circuit = next(a for a in axes if a.get_title() == "circuit")
    hollow = [ln for ln in circuit.get_lines() if ln.get_markerfacecolor() == "white" and len(ln.get_xdata())]
    assert hollow and len(hollow[0].get_xdata()) == 2  # both Mordia points are > 5 % unfinished
    electrical = next(a for a in axes if a.get_title() == "electrical")
    assert not [ln for ln in electrical.get_lines() if ln.get_markerfacecolor() == "white"]
    colours = {ln.get_color() for ln in electrical.get_lines() if ln.get_marker() not in (None, "None", "")}
    assert plots.style("esn")[0] in colours and plots.style("esn_osub")[0] in colours
    t = pd.read_csv(tmp_path / "table.csv")
    assert list(t.loc[t["fabric"] == "mordia", "flagged"]) == [True, True] and not t.loc[t["fabric"] == "esn", "flagged"].any()
    assert {"fct<10KB_p99_us", "fct<10KB_censored_p99_us", "short", "family"} <= set(t.columns)


def test_compare_report_html_is_self_contained(tmp_path):
    p = photonet_cli("compare", "--out", tmp_path / "c", "--flows", "200", "--loads", "0.5", "--fabrics", "esn,ideal",
                     "--set", "topology.racks=4", "--format", "png,svg")
    assert p.returncode == 0, p.stderr
    html = (tmp_path / "c" / "report.html").read_text()
    imgs = re.findall(r'<img[^>]*src="([^"]*)"', html)
    assert len(imgs) == 2 and all(s.startswith("data:image/png;base64,") for s in imgs)
    assert "<table>" in html and "censored" in html and "http" not in html.split("<body>")[1].split("data:")[0]
    assert (tmp_path / "c" / "fct_vs_load.svg").read_text().lstrip().startswith("<?xml")


def test_figure_formats_are_checked():
    from photonet import plots
    from photonet.config import ConfigError

    with pytest.raises(ConfigError, match="'jpg'"):
        with plots.also_write(["jpg"]):
            pass


# ---- reproduction figures: the paper's value drawn; report.html

def test_reproduction_figures_draw_the_papers_value():
    from photonet.reproduce.experiment import load_paper
    from photonet.reproduce.panels import paper_points

    fig = next(f for f in load_paper("mordia").figures if f.id == "fig10")
    pts = paper_points(fig, "goodput")
    assert pts and all(isinstance(v, float) for _, _, v in pts)
    assert not paper_points(fig, "no-such-metric")


def test_markdown_report_becomes_self_contained_html(tmp_path):
    from photonet import html

    import matplotlib.pyplot as plt

    f, ax = plt.subplots()
    ax.plot([1, 2])
    f.savefig(tmp_path / "fig01.png")
    md = "# Title\n\nSome `code` and **bold**.  \nnext line\n\n| a | b |\n|---|---|\n| x | 1.5 |\n\n![fig01](fig01.png)\n\n- one\n- two\n"
    out = html.from_markdown(md, tmp_path)
    assert "<h1>Title</h1>" in out and "<code>code</code>" in out and "<strong>bold</strong>" in out
    assert '<td class="num">1.5</td>' in out and "<li>two</li>" in out
    assert 'src="data:image/png;base64,' in out and "fig01.png\"" not in out


# ---- analysis in Python

def test_sweep_returns_a_dataframe_and_collect_reads_a_folder(tmp_path):
    df = photonet.sweep(TINY, {"workload.load": [0.2, 0.6], "fabric": ["esn", "ideal"]}, jobs=2, out=tmp_path / "sw")
    assert isinstance(df, pd.DataFrame) and len(df) == 4
    assert set(df["fabric"]) == {"esn", "ideal"} and "fct<100KB_censored_p99_us" in df
    again = photonet.collect(tmp_path / "sw", parquet=tmp_path / "t.parquet")
    assert len(again) == 4 and sorted(again["workload.load"]) == [0.2, 0.2, 0.6, 0.6]
    assert len(pd.read_parquet(tmp_path / "t.parquet")) == 4
    with pytest.raises(photonet.ConfigError, match="no sweep points"):
        photonet.collect(tmp_path)
    assert photonet.sweep.expand  # still the module


def test_result_fct_table_and_parquet(tmp_path):
    r = photonet.run(TINY)
    t = r.fct_table()
    assert list(t.index) == list(r.summary["fct"]) and t.loc["all", "count"] == r.summary["fct"]["all"]["count"]
    assert t.loc["all", "censored_p99_us"] == r.summary["fct"]["all"]["censored_p99_us"]
    r.write(tmp_path / "o", parquet=True)
    flows = pd.read_parquet(tmp_path / "o" / "flows.parquet")
    assert len(flows) == r.summary["flows"] and list(flows.columns) == list(r.flows.columns)


# ---- small CLI things

def test_default_config_for_one_fabric(tmp_path):
    p = photonet_cli("default-config", "--fabric", "sirius_ideal")
    assert p.returncode == 0, p.stderr
    tables = re.findall(r"^\[([a-z_]+)\]", p.stdout, flags=re.M)
    assert "sirius" in tables and not {"esn", "baldur", "negotiator"} & set(tables)
    assert 'fabric = "sirius_ideal"' in p.stdout
    (tmp_path / "c.toml").write_text(p.stdout)
    assert photonet_cli("validate", tmp_path / "c.toml").returncode == 0
    bad = photonet_cli("default-config", "--fabric", "siruis")
    assert bad.returncode == 2 and "siruis" in bad.stderr


def test_bench_list_and_out_folder(tmp_path):
    p = photonet_cli("bench", "--list")
    assert p.returncode == 0 and "esn-paper" in p.stdout and "200,000 flows" in p.stdout
    (tmp_path / "f").write_text("not a folder")
    p = photonet_cli("bench", "--scenario", "ideal-default", "--repeat", "1", "--out", tmp_path / "f")
    assert p.returncode == 2 and "--out" in p.stderr


def test_sweep_point_is_hidden_but_works():
    p = photonet_cli("--help")
    assert p.returncode == 0 and "sweep-point" not in p.stdout and "reproduce" in p.stdout
    assert photonet_cli("sweep-point", "--help").returncode == 0


def test_run_prints_simulated_seconds_per_wall_second(tmp_path):
    import tomli_w

    cfg = tmp_path / "t.toml"
    cfg.write_text(tomli_w.dumps(TINY))
    p = photonet_cli("run", cfg, "--no-write")
    assert p.returncode == 0, p.stderr
    assert re.search(r"[\d.e+]+ simulated s per wall s", p.stdout), p.stdout


# ---- the documentation site

def _nav() -> str:
    return (REPO / "mkdocs.yml").read_text()


def test_every_registered_fabric_has_a_page(tmp_path, monkeypatch):
    from photonet import docs_gen

    pages = docs_gen.write_fabric_pages(tmp_path / "fabrics")
    names = {p.stem for p in pages}
    nav = _nav()
    defaults = docs_gen.parameter_tables(photonet.default_config())
    for f in photonet.fabrics():
        assert f.name in names, f"{f.name}: no page"
        assert f"fabrics/{f.name}.md" in nav, f"{f.name}: not in mkdocs.yml nav"
        text = (tmp_path / "fabrics" / f"{f.name}.md").read_text()
        for key, _, _ in defaults[f.table]:
            assert f"| `{key}` |" in text, f"{f.name}: parameter {key} missing from its page"
        stats = photonet.api.statistics(f.name)
        assert stats, f"{f.name}: declares no statistics"
        for st in stats:
            assert f"| `{st.name}` | {st.unit} |" in text, f"{f.name}: statistic {st.name} missing from its page"
    # A fabric whose table has no prose gets no page: generation fails, naming it.
    src = tmp_path / "prose"
    src.mkdir()
    for p in docs_gen.PROSE.glob("*.md"):
        if p.stem != "mordia":
            (src / p.name).write_text(p.read_text())
    monkeypatch.setattr(docs_gen, "PROSE", src)
    with pytest.raises(SystemExit, match="mordia"):
        docs_gen.write_fabric_pages(tmp_path / "again")


def test_every_experiment_has_a_reproduction_page_and_scorecards_count():
    from photonet import docs_gen

    nav = _nav()
    for d in (REPO / "experiments").iterdir():
        if (d / "experiment.toml").is_file():
            assert f"reproductions/{d.name}.md" in nav, d.name
    nums = pd.DataFrame({"verdict": ["reproduced", "reproduced", "explained gap", "unexplained gap", "not attempted",
                                     "sanity ok", "sanity failed"]})
    card = docs_gen.scorecard(nums)
    assert card == {"reproduced": 2, "explained gap": 1, "unexplained gap": 1, "not attempted": 1, "sanity lines (apart)": 2}


def test_parameter_tables_read_nested_tables_and_unset_keys():
    from photonet.docs_gen import parameter_tables

    t = parameter_tables("[a]\n# The x.\nx = 1\n# Not set.\n# y = (not set)\n\n[a.sub]\n# Deep.\nz = \"2ns\"\n[b]\nw = 3\n")
    assert t["a"] == [("x", "1", "The x."), ("y", "(not set)", "Not set."), ("sub.z", '"2ns"', "Deep.")]
    assert t["b"] == [("w", "3", "")]


def test_readme_is_short_and_its_links_resolve():
    text = (REPO / "README.md").read_text()
    lines = text.splitlines()
    assert len(lines) <= 200, len(lines)
    assert lines[2:6] == [
        "```bash",
        "bash scripts/setup && .venv/bin/photonet compare      # set up, then compare every fabric on the default workload "
        "(table + plots in results/compare/)",
        "bash scripts/setup && bash scripts/test               # set up, then run every test (Rust fmt/clippy/unit/property/"
        "end-to-end, Python)",
        "```"]
    for link in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
        if link.startswith(("http://", "https://", "mailto:")):
            continue
        assert (REPO / link).exists(), f"README links to {link}, which does not exist in the repository"
