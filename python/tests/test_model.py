"""`photonet power` / `photonet cost` and photonet.model: the analytical model of Sirius §5."""
import json

import pandas as pd
import pytest

from conftest import photonet_cli
from photonet import ConfigError, model

PNG = b"\x89PNG"


def test_power_writes_table_csv_and_png(tmp_path):
    out = tmp_path / "power"
    p = photonet_cli("power", "--out", out)
    assert p.returncode == 0, p.stderr
    assert "Fig. 6a" in p.stdout and "scale tax" in p.stdout and "ESN-OSUB" in p.stdout
    assert "41.4 %" in p.stdout  # Sirius / ESN at 3x, see crates/photonet/src/model
    table = pd.read_csv(out / "table.csv")
    assert list(table["tunable_power_multiplier"]) == [1, 2, 3, 4, 5, 6]
    assert table["sirius_vs_esn"].is_monotonic_increasing
    assert table.loc[table["tunable_power_multiplier"] == 3, "paper_sirius_vs_esn"].item() == pytest.approx(0.23)
    assert (out / "fig6a.png").read_bytes()[:4] == PNG
    tax = pd.read_csv(out / "scale_tax.csv")
    assert tax.loc[tax["switch_layers"] == 0, "w_per_tbps_bisection"].item() == pytest.approx(50.0)
    archs = pd.read_csv(out / "architectures.csv")
    assert list(archs["id"]) == ["esn", "esn_osub", "sirius", "sirius_electrical"]
    report = json.loads((out / "model.json").read_text())
    assert report["summary"]["params"]["racks"] == 4000
    # Only the finished directory is left behind.
    assert [d.name for d in tmp_path.iterdir()] == ["power"]


def test_cost_writes_bars_with_error_bars(tmp_path):
    out = tmp_path / "cost"
    p = photonet_cli("cost", "--out", out)
    assert p.returncode == 0, p.stderr
    assert "Fig. 6b" in p.stdout and "Sirius (electrical)" in p.stdout
    table = pd.read_csv(out / "table.csv")
    assert list(table["id"]) == ["esn", "esn_osub", "sirius_electrical", "sirius"]
    assert set(table["tunable_cost_multiplier"]) == {3.0} and set(table["error_multiplier"]) == {5.0}
    sirius = table.set_index("id").loc["sirius"]
    assert sirius["vs_esn_error"] > sirius["vs_esn"]
    esn = table.set_index("id").loc["esn"]
    assert esn["vs_esn"] == pytest.approx(1.0) and esn["paper_sirius_vs_this"] == pytest.approx(0.28)
    assert (out / "fig6b.png").read_bytes()[:4] == PNG


def test_overrides_and_params_file(tmp_path):
    params = tmp_path / "params.toml"
    params.write_text('racks = 2000\ntransceiver_rate = "400Gbps"\ncount_rack_switches = false\n')
    out = tmp_path / "cost"
    p = photonet_cli("cost", params, "--set", "racks=1000", "--set", "tunable_cost_multiplier=4", "--error-multiplier", "6", "--out", out)
    assert p.returncode == 0, p.stderr
    report = json.loads((out / "model.json").read_text())
    prm = report["summary"]["params"]
    assert prm["racks"] == 1000 and prm["count_rack_switches"] is False and prm["tunable_cost_multiplier"] == 4
    table = pd.read_csv(out / "table.csv")
    assert set(table["tunable_cost_multiplier"]) == {4.0} and set(table["error_multiplier"]) == {6.0}
    assert "1,000 racks" in p.stdout

    p = photonet_cli("power", "--multipliers", "1,2.5", "--set", "laser_power_share=0.2", "--out", tmp_path / "power")
    assert p.returncode == 0, p.stderr
    table = pd.read_csv(tmp_path / "power" / "table.csv")
    assert list(table["tunable_power_multiplier"]) == [1.0, 2.5]
    assert table["tunable_transceiver_w"].tolist() == pytest.approx([10.0, 13.0])


def test_python_api_returns_dataframes():
    r = model.power_cost(overrides={"count_rack_switches": False})
    assert isinstance(r.power, pd.DataFrame) and isinstance(r.cost, pd.DataFrame)
    at3 = r.power.set_index("tunable_power_multiplier").loc[3.0, "sirius_vs_esn"]
    assert at3 == pytest.approx(2 * 12 / (5 * 500 / 64 + 60))  # transceivers only, see the Rust docs
    assert (r.architectures["rack_switches"] == 0).all()
    assert set(r.paper["key"]) >= {"power_vs_esn_3x", "cost_vs_esn", "scale_tax_4_layers"}
    assert model.load_params(None, ["racks=12"]) == {"racks": 12}


def test_bad_key_and_bad_value_are_errors_naming_them(tmp_path):
    out = tmp_path / "power"
    p = photonet_cli("power", "--set", "no_such_key=1", "--out", out)
    assert p.returncode == 2
    assert "no_such_key" in p.stderr, p.stderr
    assert not out.exists()
    p = photonet_cli("cost", "--set", "tunable_cost_multiplier=0.5", "--out", out)
    assert p.returncode == 2
    assert "tunable_cost_multiplier" in p.stderr and "0.5" in p.stderr and ">= 1" in p.stderr, p.stderr
    assert not out.exists()
    bad = tmp_path / "bad.toml"
    bad.write_text("switch_cost_usd = -5000.0\n")
    p = photonet_cli("cost", bad, "--out", out)
    assert p.returncode == 2
    assert "bad.toml" in p.stderr and "switch_cost_usd" in p.stderr and "-5000" in p.stderr, p.stderr
    p = photonet_cli("power", "--multipliers", "1,x", "--out", out)
    assert p.returncode == 2 and "--multipliers" in p.stderr
    with pytest.raises(ConfigError, match="laser_power_share"):
        model.power_cost(overrides=["laser_power_share=1.5"])
    assert not out.exists()
