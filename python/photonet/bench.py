"""``photonet bench``: fixed scenarios timed as whole processes (wall time, peak
memory), plus simulated-seconds per wall-second and events per second.

Each repetition runs in a fresh child process so that its peak RSS is its own.
Quote medians: these machines are shared and noisy."""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from typing import Optional, Sequence

from . import _core
from .api import fabric_names

PAPER_TOPOLOGY = {"racks": 128, "servers_per_rack": 24, "uplinks": 8, "uplink_rate": "50Gbps"}
PARETO = {"dist": "pareto", "shape": 1.05, "mean": "100KB"}
# The [sirius] table of examples/sirius_paper.toml and experiments/sirius/.
SIRIUS_PAPER = {"uplink_multiplier": 1.5, "cell_time": "90ns", "guardband": "10ns", "queue_bound": 4, "propagation": "500ns"}
# The quick scale of experiments/sirius/experiment.toml.
QUICK_TOPOLOGY = {"racks": 32, "servers_per_rack": 6, "uplinks": 2, "uplink_rate": "50Gbps"}


def _negotiator_paper(duration: str) -> dict:
    """NegotiaToR's evaluation (parallel network, 128 ToRs x 8 x 100 Gbps, 400
    Gbps per ToR, Meta Hadoop, load 1.0) for ``duration``."""
    return {
        "fabric": "negotiator",
        "topology": {"racks": 128, "servers_per_rack": 1, "uplinks": 8, "uplink_rate": "100Gbps", "server_rate": "400Gbps"},
        "workload": {"load": 1.0, "sizes": {"dist": "cdf", "file": "meta_hadoop.cdf"}},
        "stop": {"flows": 100_000_000, "duration": duration},
    }


# Paper-scale scenarios, named; every registered fabric also gets a
# "<fabric>-default" scenario (see `scenarios()`).
PAPER_SCENARIOS: dict[str, dict] = {
    "esn-paper": {
        "about": "ESN (Ideal), 128 racks x 24 servers, Pareto(1.05, 100KB), 200,000 flows, load 0.5",
        "config": {"fabric": "esn", "topology": PAPER_TOPOLOGY, "workload": {"load": 0.5, "sizes": PARETO}, "stop": {"flows": 200_000}},
    },
    "esn-osub-paper": {
        "about": "ESN-OSUB 3:1 (Ideal) at the rack uplinks, same workload, load 0.5, rates re-solved at most every 1 us",
        "config": {"fabric": "esn_osub", "topology": PAPER_TOPOLOGY, "workload": {"load": 0.5, "sizes": PARETO}, "stop": {"flows": 200_000}, "esn_osub": {"tier": "rack", "rate_update_interval": "1us"}},
    },
    # The fluid max-min solver's targets (issue 8): many flows active at once.
    "esn-a2a-quick": {
        "about": "ESN (Ideal), all-to-all of 20KB flows at the Sirius quick scale (32 racks x 6 servers, 2 x 50 Gbps): the first 10,000 pairs (stop.flows as the quick scale), all at t = 0, drained",
        "config": {"fabric": "esn", "topology": QUICK_TOPOLOGY, "workload": {"pattern": {"kind": "all_to_all", "size": "20KB"}}, "stop": {"flows": 10_000, "drain": True}},
    },
    "esn-osub-a2a-quick": {
        "about": "ESN-OSUB 3:1 at the aggregation tier (8 pods), the same all-to-all of 20KB flows, drained",
        "config": {"fabric": "esn_osub", "topology": QUICK_TOPOLOGY, "workload": {"pattern": {"kind": "all_to_all", "size": "20KB"}}, "stop": {"flows": 10_000, "drain": True}, "esn_osub": {"tier": "aggregation"}},
    },
    "esn-100k-simultaneous": {
        "about": "ESN (Ideal), paper topology, 100,000 flows of 20KB starting together (all-to-all pattern, first 100,000 pairs), drained",
        "config": {"fabric": "esn", "topology": PAPER_TOPOLOGY, "workload": {"pattern": {"kind": "all_to_all", "size": "20KB"}}, "stop": {"flows": 100_000, "drain": True}},
    },
    "esn-osub-rack-paper-exact": {
        "about": "ESN-OSUB 3:1 at the rack uplinks, paper scale, Pareto(1.05, 100KB), 200,000 flows, load 1.0, exact (rate_update_interval = 0)",
        "config": {"fabric": "esn_osub", "topology": PAPER_TOPOLOGY, "workload": {"load": 1.0, "sizes": PARETO}, "stop": {"flows": 200_000}, "esn_osub": {"tier": "rack", "rate_update_interval": "0ps"}},
    },
    "esn-osub-agg-paper-exact": {
        "about": "ESN-OSUB 3:1 at the aggregation tier (8 pods of 16 racks), paper scale, Pareto(1.05, 100KB), 200,000 flows, load 1.0, exact",
        "config": {"fabric": "esn_osub", "topology": PAPER_TOPOLOGY, "workload": {"load": 1.0, "sizes": PARETO}, "stop": {"flows": 200_000}, "esn_osub": {"tier": "aggregation", "rate_update_interval": "0ps"}},
    },
    # Issue 7: packet-level fat-tree, every host sends one 2 MiB flow to a
    # random derangement partner at t = 0 (a trace written by the worker),
    # 100 Gbps links, 1 us propagation, 4,096 B + 64 B packets, 34-packet
    # queues, DCTCP, run until every flow completes.
    **{
        f"fat-tree-k{k}-{routing}": {
            "about": f"packet fat-tree k={k} ({k**3 // 4:,} hosts), {routing}, permutation of 2 MiB flows, 100 Gbps, until done",
            "config": {
                "fabric": "fat_tree",
                "topology": {"uplink_rate": "100Gbps"},
                "fat_tree": {"k": k, "routing": routing, "buffer": f"{34 * 4160}B", "dupack_threshold": 3 if routing == "ecmp" else 10},
                "stop": {"drain": True},
            },
            "permutation": {"hosts": k**3 // 4, "bytes": 2 << 20},
        }
        for k, routing in [(16, "spray"), (16, "ecmp"), (8, "spray"), (20, "spray"), (8, "ecmp"), (20, "ecmp")]
    },
    # Issue 25: the htsim speed anchor like for like: htsim's own permutation
    # traffic file (gen_permutation.py N N 2097152 0 13, experiments/htsim/data/),
    # NDP on both sides with htsim's parameters, until every flow completes.
    **{
        f"fat-tree-k{k}-ndp-htsim": {
            "about": f"packet fat-tree k={k} ({k**3 // 4:,} hosts), NDP as htsim runs it (34-packet trimming queues, window 50, "
                     f"pulls at 99 %, source-routed spraying), htsim's perm_{k**3 // 4}.cm: 2 MiB per host at t = 0, until done",
            "config": {
                "seed": 13,
                "fabric": "fat_tree",
                "topology": {"uplink_rate": "100Gbps"},
                "fat_tree": {"k": k, "transport": "ndp", "buffer": f"{35 * 4096}B", "init_cwnd": 50, "ndp_full_packets": True},
            },
            "htsim_cm": f"perm_{k**3 // 4}",
        }
        for k in (8, 16, 20)
    },
    "fat-tree-k16-websearch": {
        "about": "packet fat-tree k=16 (1,024 hosts), ECMP, Poisson arrivals at load 0.4, web-search sizes, 2 ms",
        "config": {
            "fabric": "fat_tree",
            "topology": {"uplink_rate": "100Gbps"},
            "fat_tree": {"k": 16, "routing": "ecmp", "buffer": f"{34 * 4160}B"},
            "workload": {"load": 0.4, "sizes": {"dist": "cdf", "file": "websearch.cdf"}},
            "stop": {"duration": "2ms"},
        },
    },
    # Issue 12: Baldur and its Table VI baselines at the paper's scale
    # (1,024 nodes at 25 Gbps, 512 B packets, 10,000 per node, random
    # permutation at load 0.7, drained).
    **{
        f"{name}-baldur-paper": {
            "about": f"{label}, Baldur §V-A paper scale: 1,024 nodes, 10,000 x 512 B packets per node, permutation, load 0.7",
            "config": {
                "fabric": fabric,
                "topology": {"racks": 1024, "servers_per_rack": 1, "uplinks": 1, "uplink_rate": "25Gbps"},
                "workload": {"load": 0.7, "pattern": {"kind": "permutation"}, "sizes": {"dist": "fixed", "size": "512B"}},
                "stop": {"flows": 10_240_000, "drain": True},
                **extra,
            },
        }
        for name, fabric, label, extra in [
            ("baldur", "baldur", "Baldur (m = 4)", {"baldur": {"multiplicity": 4}}),
            ("multibutterfly", "multibutterfly", "electrical multi-butterfly (m = 4, credits, 3 VCs)", {}),
            ("dragonfly", "dragonfly", "dragonfly (p = 4, a = 8, h = 4, UGAL, credits, 3 VCs)", {}),
            ("fat-tree", "fat_tree", "fat-tree k = 16 (adaptive, credits, 3 VCs)", {"fat_tree": {"k": 16, "routing": "adaptive", "transport": "paced", "flow_control": "credit", "vcs": 3, "mtu": "512B", "header": "0B", "buffer": "24KB", "ecn_threshold": "0B", "propagation": "128ns"}}),
        ]
    },
    # The Python result path of `photonet run --out`: the same Baldur run, then
    # its result folder written (flows.csv holds 10.24 M rows).
    "baldur-baldur-paper-write": {
        "about": "Baldur (m = 4) at the §V-A paper scale as baldur-baldur-paper, then Result.write (summary, manifest, 10.24 M-row flows.csv)",
        "config": {
            "fabric": "baldur",
            "topology": {"racks": 1024, "servers_per_rack": 1, "uplinks": 1, "uplink_rate": "25Gbps"},
            "workload": {"load": 0.7, "pattern": {"kind": "permutation"}, "sizes": {"dist": "fixed", "size": "512B"}},
            "stop": {"flows": 10_240_000, "drain": True},
            "baldur": {"multiplicity": 4},
        },
        "write": True,
    },
    # Fig. 7's ping_pong1 at paper scale: closed loop, 10,000 round trips per node.
    "baldur-pingpong-paper": {
        "about": "Baldur (m = 4), ping_pong1 (closed loop: each node answers its partner's packet at once), 1,024 nodes, 10,000 x 512 B packets per node",
        "config": {
            "fabric": "baldur",
            "topology": {"racks": 1024, "servers_per_rack": 1, "uplinks": 1, "uplink_rate": "25Gbps"},
            "workload": {"pattern": {"kind": "ping_pong"}, "sizes": {"dist": "fixed", "size": "512B"}},
            "stop": {"flows": 10_240_000, "drain": True},
            "baldur": {"multiplicity": 4},
        },
    },
    "sirius-paper": {
        "about": "SIRIUS, 128 racks, 12 uplinks (1.5x), Pareto(1.05, 100KB), 200,000 flows, load 1.0",
        "config": {"fabric": "sirius", "topology": PAPER_TOPOLOGY, "workload": {"load": 1.0, "sizes": PARETO}, "stop": {"flows": 200_000}},
        "needs": "sirius",
    },
    # Issue 28: the flagship example as written (examples/sirius_paper.toml),
    # and the heaviest Sirius point of `reproduce sirius --full` (Fig. 11 at
    # 1 ns guardband: the cells are 10x smaller, so 10x more of them).
    "sirius-paper-example": {
        "about": "examples/sirius_paper.toml: SIRIUS, 128 racks x 24 servers, 12 x 11 ports, Pareto(1.05, 100KB), 200,000 flows, load 1.0, seed 1",
        "config": {
            "seed": 1,
            "fabric": "sirius",
            "topology": PAPER_TOPOLOGY,
            "workload": {"load": 1.0, "pattern": {"kind": "uniform"}, "sizes": PARETO},
            "stop": {"flows": 200_000},
            "metrics": {"size_classes": ["10KB", "100KB"]},
            "sirius": SIRIUS_PAPER,
        },
        "needs": "sirius",
    },
    "sirius-fig11-full-guardband-1ns": {
        "about": "reproduce sirius --full, Fig. 11, SIRIUS at 1 ns guardband (9 ns cells of 56 B, 10x the cells of the paper run), realised load 1.0, 200,000 flows",
        "config": {
            "seed": 1,
            "fabric": "sirius",
            "topology": PAPER_TOPOLOGY,
            "workload": {"load": 1.0, "load_basis": "realised", "pattern": {"kind": "uniform"}, "sizes": PARETO},
            "stop": {"flows": 200_000},
            "metrics": {"size_classes": ["10KB", "100KB"]},
            "sirius": {**SIRIUS_PAPER, "cell_time": "9ns", "guardband": "1ns", "server_buffer": "32KB"},
        },
        "needs": "sirius",
    },
    "negotiator-paper": {
        "about": "NegotiaToR, parallel network, 128 ToRs x 8 x 100 Gbps, 400 Gbps per ToR, Meta Hadoop, load 1.0, 30 ms",
        "config": _negotiator_paper("30ms"),
        "needs": "negotiator",
    },
    "negotiator-quick": {
        "about": "NegotiaToR, the paper's network and workload at load 1.0 for 1 ms (the quick reproduction's heaviest point)",
        "config": _negotiator_paper("1ms"),
        "needs": "negotiator",
    },
    # Issue 29: a ring all-reduce of 1 GB over 1,024 endpoints (2(n - 1) = 2,046
    # dependent steps of ~1 MB per endpoint, 2.1 M flows), drained.
    "collective-ring-1gb-fat-tree": {
        "about": "packet fat-tree k=16 (1,024 hosts, ECMP, DCTCP, 100 Gbps), ring all-reduce of 1 GB over every host",
        "config": {
            "fabric": "fat_tree",
            "topology": {"uplink_rate": "100Gbps"},
            "fat_tree": {"k": 16},
            "workload": {"pattern": {"kind": "collective", "jobs": [{"collective": "all_reduce", "algorithm": "ring", "message": "1GB"}]}},
        },
    },
    "collective-ring-1gb-negotiator": {
        "about": "NegotiaToR, parallel network, 1,024 ToRs x 8 x 100 Gbps, 400 Gbps per ToR, ring all-reduce of 1 GB over every ToR",
        "config": {
            "fabric": "negotiator",
            "topology": {"racks": 1024, "servers_per_rack": 1, "uplinks": 8, "uplink_rate": "100Gbps", "server_rate": "400Gbps"},
            "workload": {"pattern": {"kind": "collective", "jobs": [{"collective": "all_reduce", "algorithm": "ring", "message": "1GB"}]}},
        },
        "needs": "negotiator",
    },
    # Issue 11: whole paper-scale reproductions (every point of the figure,
    # one after another in one process; the figure's own files, traces
    # included, from experiments/<paper>/). The target is under a minute of
    # CPU on one core for each.
    **{
        f"{paper}-{fig}-paper": {
            "about": about,
            "experiment": {"paper": paper, "only": fig, "scale": "full"},
            "needs": needs,
        }
        for paper, fig, needs, about in [
            ("reactor", "fig10", "reactor", "REACToR Fig. 10 at paper scale: 64 hosts at 100 Gbps, 12 ms, 11 demands x {circuit ToR, 10G EPS, 20G EPS} = 33 runs"),
            ("reactor", "fig11", "reactor", "REACToR Fig. 11 at paper scale: 64 hosts at 100 Gbps, 12 ms, 8 small-flow counts x 3 series = 24 runs"),
            ("mordia", "fig04", "mordia_rr", "Mordia Fig. 4: 8 ToRs x 8 hosts, all-to-all from cold start, 17 probe runs"),
            ("mordia", "fig10", "mordia_rr", "Mordia Fig. 10: 23 hosts at 10 Gbps, all-to-all of 20 MB, 5 day lengths x 3 series (round-robin, NIC delay, TMS), drained"),
            ("mordia", "table2", "mordia", "Mordia Table 2 method, simulated: 4 ToRs, TMS truncated to n = 1..9 days + 10 Gbps packet switch, 20 weeks of 1 ms, oracle and measured demand (1, 2 weeks old) = 27 runs"),
        ]
    },
    # Issue 28: each paper's slowest point of `reproduce <paper> --full` (one
    # point of a figure: its series at one x, as the reproduction builds it).
    **{
        name: {"about": about, "experiment": {"paper": paper, "only": fig, "scale": "full", "series": series, "x": x}, "needs": needs}
        for name, paper, fig, series, x, needs, about in [
            ("sirius-fig12w-full-sirius-1x", "sirius", "fig12w", "SIRIUS 1x", 10000.0, "sirius",
             "reproduce sirius --full, Fig. 12's worst case: SIRIUS 1x, §4.2 all-to-all of 10 KB flows (9.4 M flows)"),
            ("sirius-fig12w-full-ideal-1x", "sirius", "fig12w", "SIRIUS (IDEAL) 1x", 10000.0, "sirius_ideal",
             "reproduce sirius --full, the slowest point: SIRIUS (IDEAL) 1x on the §4.2 all-to-all (9.4 M flows; LOCAL's pick per link)"),
            ("sirius-fig09-full-esn-osub-75", "sirius", "fig09", "ESN-OSUB (Ideal)", 0.75, "esn_osub",
             "reproduce sirius --full, Fig. 9's ESN-OSUB (Ideal) at realised load 0.75: the fluid's max-min re-solve every 100 ns"),
            ("negotiator-fig13a-full-oblivious-100", "negotiator", "fig13a", "Traffic-oblivious thin-clos", 1.0, "sirius_ideal",
             "reproduce negotiator --full, Fig. 13(a): the traffic-oblivious thin-clos baseline at 100 % background load"),
            ("negotiator-fig13c-full-oblivious-100", "negotiator", "fig13c", "Traffic-oblivious thin-clos", 1.0, "sirius_ideal",
             "reproduce negotiator --full, the slowest point: Fig. 13(c)'s traffic-oblivious baseline at 100 % load (66.4 M Google RPC flows in 30 ms)"),
            ("baldur-fig06a-full-multibutterfly-0.9", "baldur", "fig06a", "Electrical multi-butterfly", 0.9, "multibutterfly",
             "reproduce baldur --full, Fig. 6(a): electrical multi-butterfly, random permutation at load 0.9, 10.24 M packets"),
            ("yaps-flows10k-full", "yaps", "flows10k", "photonet pFabric", "pfabric_websearch_l50", "leaf_spine",
             "reproduce yaps --full: pFabric on the leaf-spine, YAPS's pfabric_websearch_l50 trace, 10,000 flows (412 M events)"),
        ]
    },
}


def _default_scenario(fabric) -> dict:
    """A registered fabric on the `compare` default scenario at load 0.5."""
    from .compare import scenario

    cfg, _, _ = scenario()
    cfg = {**cfg, "fabric": fabric.name, "workload": {**cfg.get("workload", {}), "load": 0.5}}
    flows = cfg.get("stop", {}).get("flows")
    return {"about": f"{fabric.label}, the `compare` default scenario at load 0.5 ({flows:,} flows)", "config": cfg}


def scenarios() -> dict[str, dict]:
    """Every scenario: the paper-scale ones, then one per registered fabric
    (a fabric joins `bench` by being registered)."""
    from .api import fabrics

    out = dict(PAPER_SCENARIOS)
    for f in fabrics():
        out[f"{f.name}-default"] = _default_scenario(f)
    return out


_ALL: Optional[dict[str, dict]] = None


def _all() -> dict[str, dict]:
    global _ALL
    if _ALL is None:
        _ALL = scenarios()
    return _ALL


def scenario(name: str) -> dict:
    """The scenario ``name``. A paper-scale one is found without building the
    per-fabric ones (which read the `compare` scenario, and so import pandas and
    matplotlib): a bench worker imports only what its run needs."""
    return PAPER_SCENARIOS[name] if name in PAPER_SCENARIOS else _all()[name]


def __getattr__(name: str):
    # `bench.SCENARIOS`: every scenario, built on first use.
    if name == "SCENARIOS":
        return _all()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def available() -> list[str]:
    fabs = set(fabric_names())
    return [k for k, v in _all().items() if v.get("needs") is None or v["needs"] in fabs]


def _permutation_trace(hosts: int, size: int, seed: int = 1) -> str:
    """A trace where host i sends `size` bytes to perm[i] at t = 0, perm a
    random derangement (Sattolo: one cycle)."""
    import random

    rng = random.Random(seed)
    perm = list(range(hosts))
    for i in range(hosts - 1, 0, -1):
        j = rng.randrange(i)
        perm[i], perm[j] = perm[j], perm[i]
    return "src,dst,bytes,start\n" + "".join(f"{i},{perm[i]},{size},0ps\n" for i in range(hosts))


def _worker(name: str) -> None:
    import copy
    import tempfile
    from pathlib import Path

    from .api import run

    sc = scenario(name)
    if "experiment" in sc:
        _experiment_worker(sc["experiment"])
        return
    cfg = copy.deepcopy(sc["config"])
    perm = sc.get("permutation")
    with tempfile.TemporaryDirectory() as tmp:
        if sc.get("htsim_cm"):
            from .reproduce.experiment import experiments_root

            cm = sc["htsim_cm"]
            cfg.setdefault("workload", {})["pattern"] = {"kind": "htsim", "file": str(experiments_root() / "htsim" / "data" / cm / f"{cm}.cm")}
        if perm:
            f = Path(tmp) / "permutation.csv"
            f.write_text(_permutation_trace(perm["hosts"], perm["bytes"]))
            cfg.setdefault("workload", {})["pattern"] = {"kind": "trace", "file": str(f)}
        r = run(cfg)
        if sc.get("write"):
            r.write(Path(tmp) / "result")
    stats = r.summary.get("fabric_stats", {})
    extra = {k: stats[k] for k in ("data_packets_delivered", "packet_hops") if k in stats}
    print(json.dumps({"sim_wall_s": r.manifest["wall_s"], "events": r.summary["events"], "sim_time_us": r.summary["sim_time_us"], "flows": r.summary["flows"], **extra}))


def _experiment_worker(exp: dict) -> None:
    """Runs every simulated point of one figure of a reproduction (or its one
    point of ``series`` at ``x``), one after another (no result files), and
    prints the totals."""
    from .api import run
    from .reproduce.experiment import load_paper, x_equal
    from .reproduce.points import build_points

    paper = load_paper(exp["paper"])
    _, fps = build_points(paper, exp.get("scale", "full"), only=[exp["only"]])
    if "series" in exp:  # one point of the figure
        fps = [fp for fp in fps if fp.series == exp["series"] and x_equal(fp.x, exp["x"])]
        if len(fps) != 1:
            raise SystemExit(f"bench: {exp['paper']} {exp['only']} has no point {exp['series']!r} at x = {exp['x']!r}")
    tot = {"sim_wall_s": 0.0, "events": 0, "sim_time_us": 0.0, "flows": 0, "points": 0}
    for fp in fps:
        if fp.point is None:
            continue
        r = run(fp.point.config_toml, base_dir=fp.point.base_dir)
        tot["sim_wall_s"] += r.manifest["wall_s"]
        tot["events"] += r.summary["events"]
        tot["sim_time_us"] += r.summary["sim_time_us"]
        tot["flows"] += r.summary["flows"]
        tot["points"] += 1
    print(json.dumps(tot))


def measure(name: str, repeat: int = 3) -> dict:
    runs = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-m", "photonet.bench", "worker", name], stdout=subprocess.PIPE, text=True)
        out = proc.stdout.read() if proc.stdout else ""
        _, status, ru = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - t0
        if proc.returncode != 0:
            raise RuntimeError(f"bench scenario {name} failed with exit code {proc.returncode}")
        info = json.loads(out.strip().splitlines()[-1])
        runs.append({"wall_s": wall, "cpu_s": ru.ru_utime + ru.ru_stime, "peak_rss_mb": ru.ru_maxrss / 1024, **info})
    med = statistics.median(r["wall_s"] for r in runs)
    sim_med = statistics.median(r["sim_wall_s"] for r in runs)
    info = runs[0]
    return {
        "scenario": name,
        "about": scenario(name)["about"],
        "repeat": repeat,
        "wall_s_median": med,
        "wall_s_min": min(r["wall_s"] for r in runs),
        "wall_s_max": max(r["wall_s"] for r in runs),
        "cpu_s_median": statistics.median(r["cpu_s"] for r in runs),
        "sim_wall_s_median": sim_med,
        "peak_rss_mb_max": max(r["peak_rss_mb"] for r in runs),
        "events": info["events"],
        "flows": info["flows"],
        "sim_time_us": info["sim_time_us"],
        "sim_s_per_wall_s": info["sim_time_us"] / 1e6 / sim_med,
        "events_per_s": info["events"] / sim_med,
        **(
            {
                "ns_per_delivered_packet": sim_med * 1e9 / info["data_packets_delivered"],
                "ns_per_packet_hop": sim_med * 1e9 / info["packet_hops"],
            }
            if info.get("data_packets_delivered")
            else {}
        ),
        "runs": runs,
    }


def main(argv: Optional[Sequence[str]] = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    if len(argv) == 2 and argv[0] == "worker":
        _worker(argv[1])
    else:
        raise SystemExit("usage: python -m photonet.bench worker SCENARIO (use `photonet bench`)")


if __name__ == "__main__":
    main()
