//! The packet fat-tree benchmark of issue 7, one run, with its counts:
//! `cargo run --release -p photonet --example net_bench -- [k] [spray|ecmp|adaptive] [MiB] [dupacks]`
//! (default: k = 16 → 1,024 hosts, spraying, 2 MiB), or
//! `net_bench [k] websearch` (the criterion scenario `fat_tree/k16_websearch_load0.4_2ms`:
//! ECMP, Poisson arrivals at load 0.4 with `websearch.cdf` sizes from
//! `$PHOTONET_WORKLOADS` or the package's `python/photonet/workloads`, 2 ms,
//! no drain). Every host sends one
//! flow to a random derangement partner at t = 0; 100 Gbps links, 1 us
//! propagation, 4,096 B payload + 64 B header, 34-packet switch queues; the
//! run ends when every flow has completed. Prints wall time, ns of wall per
//! delivered data packet and per packet-hop, and peak RSS.

use photonet::engine::{run, StopRule};
use photonet::net::Routing;
use photonet::recorder::Recorder;
use photonet::scenarios;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let k: u32 = args.get(1).map_or(16, |s| s.parse().unwrap());
    if args.get(2).is_some_and(|s| s == "websearch") {
        return websearch(k);
    }
    let routing = match args.get(2).map_or("spray", |s| s.as_str()) {
        "ecmp" => Routing::Ecmp,
        "adaptive" => Routing::Adaptive,
        _ => Routing::Spray,
    };
    let mib: u64 = args.get(3).map_or(2, |s| s.parse().unwrap());
    // Spraying reorders packets: a higher duplicate-ACK threshold avoids
    // spurious fast retransmits.
    let dupack: u32 = args
        .get(4)
        .map_or(scenarios::default_dupacks(routing), |s| s.parse().unwrap());
    let c = scenarios::fat_tree_config(k, routing, dupack);
    let t0 = Instant::now();
    let mut fabric = photonet::run::build_fabric(&c).unwrap();
    let n = fabric.hosts() as u32;
    let flows = scenarios::permutation_flows(n, mib << 20);
    let stop = StopRule {
        drain: true,
        ..StopRule::default()
    };
    let out = run(
        fabric.as_mut(),
        &mut flows.into_iter(),
        &stop,
        Recorder::new(None),
        &mut |_| true,
    );
    let wall = t0.elapsed().as_secs_f64();
    // CPU time of this process (the machine is shared: wall includes waiting).
    let cpu = cpu_s(wall);
    let s = fabric.stats();
    let pk = s["data_packets_delivered"];
    let hops = s["packet_hops"];
    let rss = peak_rss_mb();
    println!(
        "k={k} hosts={n} routing={routing:?} completed={}/{n} sim={} wall={wall:.3}s cpu={cpu:.3}s data_pkts={pk} hops={hops} cpu_ns/pkt={:.1} cpu_ns/hop={:.1} drops={} timeouts={} retx={} peak_rss={rss:.0}MB",
        out.recorder.completed(),
        out.end_time,
        cpu * 1e9 / pk,
        cpu * 1e9 / hops,
        s["drops"],
        s["timeouts"],
        s["retransmissions"],
    );
}

/// Peak resident set of this process, MB.
fn peak_rss_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find(|l| l.starts_with("VmHWM"))
        .map(|l| l.split_whitespace().nth(1).unwrap().parse::<f64>().unwrap() / 1024.0)
        .unwrap_or(0.0)
}

/// CPU time of this process so far, s (`wall` if unavailable).
fn cpu_s(wall: f64) -> f64 {
    std::fs::read_to_string("/proc/self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<f64>().ok())
        .map_or(wall, |ns| ns / 1e9)
}

/// The web-search scenario of `benches/net.rs`: ECMP, load 0.4, 2 ms.
fn websearch(k: u32) {
    use photonet::run::{prepare, simulate};
    let c = scenarios::websearch_config(k);
    let paths = scenarios::workload_paths();
    let t0 = Instant::now();
    let r = simulate(prepare(&c, &paths).unwrap(), &mut |_| true).unwrap();
    let wall = t0.elapsed().as_secs_f64();
    let cpu = cpu_s(wall);
    let s = &r.summary;
    let f = &s.fabric_stats;
    let pk = f["data_packets_delivered"];
    let hops = f["packet_hops"];
    println!(
        "k={k} hosts={} websearch load=0.4 2ms flows={} completed={} sim={}us delivered_bytes={} wall={wall:.3}s cpu={cpu:.3}s data_pkts={pk} hops={hops} cpu_ns/pkt={:.1} cpu_ns/hop={:.1} drops={} timeouts={} retx={} peak_rss={:.0}MB",
        s.hosts,
        s.flows,
        s.completed,
        s.sim_time_us,
        s.delivered_bytes,
        cpu * 1e9 / pk,
        cpu * 1e9 / hops,
        f["drops"],
        f["timeouts"],
        f["retransmissions"],
        peak_rss_mb(),
    );
}
