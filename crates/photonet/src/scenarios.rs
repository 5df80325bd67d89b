//! The fixed packet fat-tree scenarios of issue 7, defined once for the
//! benchmark example (`examples/net_bench.rs`), the criterion benches
//! (`benches/net.rs`) and the engine's pinned-results test
//! (`tests/net_exact.rs`):
//!
//! - the htsim comparison: a k-ary fat-tree at 100 Gbps, 1 us propagation,
//!   4,096 B payload + 64 B header, 34-packet switch queues, every host
//!   sending one flow to a random derangement partner at t = 0, drained;
//! - web search: the same network with ECMP, Poisson arrivals at load 0.4
//!   with `websearch.cdf` sizes, 2 ms of arrivals, no drain.

use crate::config::{Config, SizesConfig};
use crate::fabric::fat_tree::FatTreeParams;
use crate::flow::Flow;
use crate::net::Routing;
use crate::rng::RngStreams;
use crate::run::Paths;
use crate::units::{ByteSize, Rate, SimTime};

/// The htsim-comparison network: k-ary fat-tree, `routing`, a duplicate-ACK
/// threshold of `dupacks` (spraying reorders packets: 10 avoids spurious
/// fast retransmits; ECMP uses 3).
pub fn fat_tree_config(k: u32, routing: Routing, dupacks: u32) -> Config {
    let mut c = Config {
        fabric: "fat_tree".into(),
        ..Config::default()
    };
    c.topology.uplink_rate = Rate::gbps(100);
    c.set_params(&FatTreeParams {
        k,
        routing,
        buffer: ByteSize(34 * 4160),
        dupack_threshold: dupacks,
        ..FatTreeParams::default()
    });
    c
}

/// The duplicate-ACK threshold the scenarios use for `routing`.
pub fn default_dupacks(routing: Routing) -> u32 {
    if routing == Routing::Ecmp {
        3
    } else {
        10
    }
}

/// Every one of `hosts` sends one flow of `bytes` to its partner in a
/// derangement drawn from seed 1's "perm" stream, all at t = 0.
pub fn permutation_flows(hosts: u32, bytes: u64) -> Vec<Flow> {
    let perm = crate::workload::derangement(hosts, &mut RngStreams::new(1).stream("perm"));
    (0..hosts)
        .map(|i| Flow {
            id: i,
            src: i,
            dst: perm[i as usize],
            bytes,
            start: SimTime::ZERO,
        })
        .collect()
}

/// The web-search scenario on a k-ary fat-tree (ECMP, load 0.4, 2 ms).
pub fn websearch_config(k: u32) -> Config {
    let mut c = fat_tree_config(k, Routing::Ecmp, FatTreeParams::default().dupack_threshold);
    c.workload.load = 0.4;
    c.workload.sizes = SizesConfig::cdf("websearch.cdf");
    c.stop.flows = None;
    c.stop.duration = Some(SimTime::ms(2));
    c
}

/// Where the scenarios find workload files: `$PHOTONET_WORKLOADS` first,
/// then the standard CDFs shipped in the Python package (`python/photonet/workloads`).
pub fn workload_paths() -> Paths {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut search: Vec<std::path::PathBuf> = std::env::var_os("PHOTONET_WORKLOADS")
        .map(|v| std::env::split_paths(&v).collect())
        .unwrap_or_default();
    search.push(root.join("python/photonet/workloads"));
    Paths {
        base_dir: None,
        search,
    }
}

/// Builds the fabric of `c`, runs every host's permutation flow of `bytes`
/// to completion (drained) and returns the fabric and the run's output.
pub fn run_permutation(
    c: &Config,
    bytes: u64,
) -> (Box<dyn crate::fabric::Fabric>, crate::engine::RunOutput) {
    let mut fabric = crate::run::build_fabric(c).expect("the scenario's config is valid");
    let n = fabric.hosts() as u32;
    let stop = crate::engine::StopRule {
        drain: true,
        ..crate::engine::StopRule::default()
    };
    let out = crate::engine::run(
        fabric.as_mut(),
        &mut permutation_flows(n, bytes).into_iter(),
        &stop,
        crate::recorder::Recorder::new(None),
        &mut |_| true,
    );
    (fabric, out)
}
