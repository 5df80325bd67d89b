"""The fabric registry as Python sees it: every surface lists every fabric, and
the key of a sweep/compare/reproduce point does not depend on which other
fabrics exist."""
import re

import photonet
from photonet import bench
from photonet.config import complete, config_hash, tomllib
from photonet.reproduce.points import point_key

from conftest import REPO

DEFAULTS = tomllib.loads(photonet.default_config())
SMALL = {"topology": {"racks": 4, "servers_per_rack": 2, "uplinks": 2}, "stop": {"flows": 50}}


def test_fabrics_come_with_label_table_and_description():
    fabs = photonet.fabrics()
    assert [f.name for f in fabs] == photonet.fabric_names()
    assert len(set(photonet.fabric_names())) == len(fabs)
    for f in fabs:
        assert f.label and f.description and f.table
    # Variants share a table (sirius_ideal is configured by [sirius]).
    by = {f.name: f.table for f in fabs}
    assert by["sirius_ideal"] == by["sirius"] == "sirius"


def test_a_point_key_ignores_other_fabrics_tables():
    """Registering a fabric adds a table to what a point's config may hold; the
    key of every existing point stays the same."""
    for f in photonet.fabrics():
        alone = dict(SMALL, fabric=f.name)
        # The same run with every other registered table present (complete,
        # as `default-config` writes them), as a grid over `fabric` has it.
        every = dict(alone)
        for g in photonet.fabrics():
            if g.table != f.table:
                every[g.table] = DEFAULTS[g.table]
        text_alone, _ = complete(alone)
        text_every, _ = complete(every)
        assert text_alone == text_every, f.name
        assert point_key(text_alone) == point_key(text_every)
        tables = {g.table for g in photonet.fabrics()}
        present = set(tomllib.loads(text_alone)) & tables
        assert present == {f.table}, f.name


def test_a_fabrics_own_table_changes_its_key():
    a, _ = complete(dict(SMALL, fabric="ideal"))
    b, _ = complete(dict(SMALL, fabric="ideal", ideal={"latency": "300ns"}))
    assert config_hash(a) != config_hash(b)


def test_default_config_documents_every_fabric_table():
    text = photonet.default_config()
    for f in photonet.fabrics():
        assert f"[{f.table}]" in text, f.table
    assert "# One-way latency between any two endpoints" in text


def test_readme_fabric_table_lists_every_registered_fabric():
    readme = (REPO / "README.md").read_text()
    rows = re.findall(r"^\| `([a-z_0-9]+)` \|", readme, flags=re.M)
    assert rows == photonet.fabric_names()


def test_every_fabric_has_a_bench_scenario():
    for name in photonet.fabric_names():
        s = bench.SCENARIOS[f"{name}-default"]
        assert s["config"]["fabric"] == name
    assert set(bench.available()) >= {f"{n}-default" for n in photonet.fabric_names()}


def test_experiment_bench_scenarios_name_existing_figures():
    """`photonet bench` scenarios that time a whole reproduction figure point
    at a figure that exists and whose every point builds (nothing runs)."""
    from photonet.reproduce.experiment import load_paper, x_equal
    from photonet.reproduce.points import build_points

    exp = {k: s["experiment"] for k, s in bench.SCENARIOS.items() if "experiment" in s}
    assert {"reactor-fig10-paper", "reactor-fig11-paper", "mordia-table2-paper"} <= set(exp)
    assert {"sirius-fig12w-full-sirius-1x", "negotiator-fig13a-full-oblivious-100", "baldur-fig06a-full-multibutterfly-0.9",
            "yaps-flows10k-full", "sirius-fig12w-full-ideal-1x", "sirius-fig09-full-esn-osub-75", "negotiator-fig13c-full-oblivious-100"} <= set(exp)
    for name, e in exp.items():
        _, fps = build_points(load_paper(e["paper"]), e["scale"], only=[e["only"]])
        assert fps and all(fp.point is not None for fp in fps), name
        if "series" in e:  # one point of the figure: exactly one matches
            assert sum(fp.series == e["series"] and x_equal(fp.x, e["x"]) for fp in fps) == 1, name
