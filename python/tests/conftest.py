import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

# Every run in the tests (in this process and in CLI subprocesses) checks the
# fabric's invariants after every event; a violation fails the test below.
os.environ["PHOTONET_CHECK_INVARIANTS"] = "1"


@pytest.fixture(autouse=True)
def no_invariant_violations(monkeypatch):
    import photonet.api

    real = photonet.api.run

    def checked(*args, **kwargs):
        r = real(*args, **kwargs)
        assert not r.summary.get("invariant_violations"), r.summary["invariant_violations"][:5]
        return r

    monkeypatch.setattr(photonet.api, "run", checked)
    monkeypatch.setattr(photonet, "run", checked)
SHARED = REPO.parent / "shared" / "workloads"


@pytest.fixture
def small():
    """A small, fast config as a dict: 4 racks x 4 servers."""
    return {
        "topology": {"racks": 4, "servers_per_rack": 4, "uplinks": 4, "uplink_rate": "10Gbps"},
        "workload": {"load": 0.6, "sizes": {"dist": "pareto", "shape": 1.5, "mean": "20KB"}},
        "stop": {"flows": 1500},
    }


def photonet_cli(*args, cwd=None):
    """Runs the CLI in a subprocess; returns CompletedProcess."""
    return subprocess.run(
        [sys.executable, "-m", "photonet.cli", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "COLUMNS": "200"},
    )


# 4 racks x 2 servers at 10 Gbps.
TINY_TOPOLOGY = """
[topology]
racks = 4
servers_per_rack = 2
uplinks = 2
uplink_rate = "10Gbps"
"""
# A tiny run (4 racks x 2 servers, 300 flows) as a config file, for CLI tests.
TINY = TINY_TOPOLOGY + """[workload]
load = 0.4
[workload.sizes]
dist = "pareto"
shape = 1.5
mean = "20KB"
[stop]
flows = 300
"""


@pytest.fixture
def cfg(tmp_path):
    p = tmp_path / "tiny.toml"
    p.write_text(TINY)
    return p
