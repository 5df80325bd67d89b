"""htsim's connection matrices as input (`pattern = {kind = "htsim", file}`):
flows start at the .cm's picosecond times, triggered flows when the flows
firing their trigger complete; a bad file is refused with its line."""
from pathlib import Path

import pytest

import photonet
from photonet.config import ConfigError

CM = """Nodes 8
Connections 3
Triggers 1
0->1 id 1 start 1000000 size 125000 send_done_trigger 7
2->1 id 2 start 2000000 size 250000 recv_done_trigger 7
1->3 id 3 trigger 7 size 1000
trigger id 7 barrier count 2
"""


def config(tmp_path: Path, text: str) -> dict:
    (tmp_path / "m.cm").write_text(text)
    return {"fabric": "ideal", "topology": {"racks": 4, "servers_per_rack": 2, "uplinks": 2, "uplink_rate": "100Gbps"},
            "workload": {"pattern": {"kind": "htsim", "file": str(tmp_path / "m.cm")}}}


def test_a_connection_matrix_runs_with_its_times_and_triggers(tmp_path):
    r = photonet.run(config(tmp_path, CM))
    f = r.flows.set_index("id")
    assert r.summary["completed"] == 3
    assert list(f["start_us"][:2]) == [1.0, 2.0]  # picoseconds in the file
    # The triggered flow starts when the later of the two firing flows completes.
    assert f.loc[2, "start_us"] == pytest.approx(max(f.loc[0, "finish_us"], f.loc[1, "finish_us"]), abs=1e-6)
    assert f.loc[2, "start_us"] > f.loc[0, "finish_us"]


def test_a_bad_matrix_names_its_line(tmp_path):
    with pytest.raises(ConfigError, match=r"workload.pattern.file.*line 6: flow 3 waits for trigger 9"):
        photonet.run(config(tmp_path, CM.replace("trigger 7 size 1000", "trigger 9 size 1000")))
    with pytest.raises(ConfigError, match=r"line 4: source 9 is outside the matrix's 8 nodes"):
        photonet.run(config(tmp_path, CM.replace("0->1 id 1", "9->1 id 1")))


REF = Path(__file__).resolve().parents[3] / "shared" / "validation" / "htsim" / "incast_128" / "incast_128.cm"


@pytest.mark.skipif(not REF.is_file(), reason="../shared/validation is not beside this clone")
def test_htsim_incast_reference_matrix_runs_on_the_fat_tree():
    cfg = {"fabric": "fat_tree", "topology": {"racks": 32, "servers_per_rack": 4, "uplinks": 4, "uplink_rate": "100Gbps"},
           "fat_tree": {"k": 8}, "workload": {"pattern": {"kind": "htsim", "file": str(REF)}}}
    try:
        r = photonet.run(cfg)
    except ConfigError as e:  # the fat-tree's own keys differ: say so rather than pass silently
        pytest.fail(str(e))
    assert r.summary["completed"] == 16 and r.summary["unfinished"] == 0
