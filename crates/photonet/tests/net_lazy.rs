//! The lazy paths of `net::sim` against the references they replace, on the
//! three credit networks' routers (fat-tree, multi-butterfly, dragonfly
//! with UGAL), with random VC counts, tiny VC buffers (ports wait for
//! credits often, and links hold more releases than they have slots),
//! credit delays, packet sizes, transports and flows:
//! - lazy credit returns (`Queues::return_credit`) against every credit an
//!   event of its own (`Network::set_lazy_credits(false)`);
//! - lazy port-free (`Queues::hold_release`), with lazy credits, against
//!   every transmission's end a port-free event
//!   (`Network::set_lazy_port_free(false)`).
//!
//! Every flow finishes at the same picosecond and every statistic is the
//! same (`credit_stalls` and the per-port buffer peaks included), except
//! the one that counts calendar entries (`peak_packets_in_flight`); the lazy
//! run processes fewer events.

use photonet::fabric::fat_tree::{Clos, FatTreeParams};
use photonet::fabric::registry::BuildContext;
use photonet::flow::Flow;
use photonet::net::dragonfly::Dragonfly;
use photonet::net::multibutterfly::MultiButterfly;
use photonet::net::{
    CreditConfig, DctcpConfig, FlowControl, Graph, NetConfig, Network, Router, Routing, Transport,
};
use photonet::recorder::Recorder;
use photonet::rng::RngStreams;
use photonet::topology::Topology;
use photonet::units::{Rate, SimTime};
use proptest::prelude::*;

use crate::common;
use common::{drain, flow, numbered, Steps};

/// What a run leaves: per flow (id order) its delivered bytes and finish
/// time, the network's statistics, and the calendar events it processed.
#[derive(Debug, PartialEq)]
struct Outcome {
    flows: Vec<(u64, Option<SimTime>)>,
    stats: Vec<(String, f64)>,
    /// Per port: peak buffered bytes (its ingress peak as a link included),
    /// drops, marks, pause time.
    ports: Vec<(u64, u64, u64, u64)>,
}

/// Which lazy path a test pits against its eager reference.
#[derive(Clone, Copy, Debug)]
enum Lazy {
    Credits,
    PortFree,
}

fn run<R: Router>(
    graph: Graph,
    router: R,
    cfg: NetConfig,
    flows: &[Flow],
    which: Lazy,
    lazy: bool,
) -> (Outcome, u64) {
    let nports = graph.ports.len() as u32;
    let mut net = Network::new(cfg, graph, router);
    assert!(net.lazy_credits() && net.lazy_port_free());
    match which {
        Lazy::Credits => {
            net.set_lazy_credits(lazy);
            assert_eq!(net.lazy_credits(), lazy);
        }
        Lazy::PortFree => {
            net.set_lazy_port_free(lazy);
            assert_eq!(net.lazy_port_free(), lazy);
        }
    }
    let mut net = Net(net);
    let rec = drain(&mut net, flows, 1);
    let net = net.0;
    let stats = net
        .stats()
        .into_iter()
        .filter(|(k, _)| k != "peak_packets_in_flight")
        .collect();
    let out = Outcome {
        flows: flows
            .iter()
            .map(|f| (rec.delivered(f.id), rec.finish(f.id)))
            .collect(),
        stats,
        ports: (0..nports).map(|p| net.port_stats(p)).collect(),
    };
    (out, rec.internal_events())
}

fn stat(o: &Outcome, key: &str) -> f64 {
    o.stats.iter().find(|(k, _)| k == key).expect(key).1
}

/// Flows from (bytes, start ns, src, dst) tuples over `hosts` hosts, sorted
/// by start and numbered.
fn flows(spec: &[(u64, u64, u32, u32)], hosts: u32) -> Vec<Flow> {
    numbered(
        spec.iter()
            .map(|&(bytes, t, s, d)| {
                let src = s % hosts;
                let dst = if d % hosts == src {
                    (src + 1) % hosts
                } else {
                    d % hosts
                };
                flow(0, src, dst, bytes, t)
            })
            .collect(),
    )
}

/// A bare network as the shared test driver sees it.
struct Net<R: Router>(Network<R>);

impl<R: Router> Steps for Net<R> {
    fn next_event(&self) -> Option<SimTime> {
        self.0.next_event()
    }
    fn advance(&mut self, now: SimTime, rec: &mut Recorder) {
        self.0.advance(now, rec)
    }
    fn add_flow(&mut self, now: SimTime, flow: &Flow, rec: &mut Recorder) {
        self.0.add_flow(now, flow, rec)
    }
    fn check_invariants(&self) -> Result<(), String> {
        self.0.check_invariants()
    }
}

fn cfg(
    vcs: u8,
    frames: u64,
    payload: u32,
    delay_ns: u64,
    paced: bool,
    routing: Routing,
) -> NetConfig {
    let frame = payload as u64 + 64;
    NetConfig {
        payload,
        header: 64,
        ack_bytes: 64,
        propagation: SimTime::ns(100),
        buffer: vcs as u64 * frames * frame,
        ecn_k: None,
        flow_control: FlowControl::Credit(CreditConfig {
            vcs,
            vc_buffer: frames * frame,
            credit_delay: SimTime::ns(delay_ns),
        }),
        transport: if paced {
            Transport::Paced
        } else {
            Transport::Dctcp(DctcpConfig {
                rto_min: SimTime::us(50),
                ..match NetConfig::default().transport {
                    Transport::Dctcp(d) => d,
                    _ => unreachable!("the default transport is DCTCP"),
                }
            })
        },
        routing,
        cut_through: true,
        ..NetConfig::default()
    }
}

fn fat_tree(seed: u64) -> (Graph, Clos) {
    let t = Topology {
        uplink_rate: Rate::gbps(100),
        ..Topology::default()
    };
    let p = FatTreeParams {
        k: 4,
        ..FatTreeParams::default()
    };
    let ctx = BuildContext {
        topology: &t,
        seed,
        check_invariants: true,
    };
    let clos = Clos::layout(&p, false, &ctx).unwrap();
    (clos.graph(), clos)
}

/// Lazy and eager runs of `which` agree; the lazy one processed fewer
/// events. Returns the lazy outcome.
fn same<R: Router>(
    which: Lazy,
    build: impl Fn() -> (Graph, R),
    cfg: NetConfig,
    flows: &[Flow],
) -> Result<Outcome, TestCaseError> {
    let (g, r) = build();
    let (eager, n_eager) = run(g, r, cfg.clone(), flows, which, false);
    let (g, r) = build();
    let (lazy, n_lazy) = run(g, r, cfg, flows, which, true);
    prop_assert_eq!(&lazy, &eager);
    prop_assert!(
        n_lazy < n_eager,
        "{} events lazy, {} eager",
        n_lazy,
        n_eager
    );
    for (i, f) in flows.iter().enumerate() {
        prop_assert_eq!(lazy.flows[i].0, f.bytes);
    }
    Ok(lazy)
}

/// A 16-to-1 incast into one host with one-frame VC buffers: ports wait
/// for credits all the time (a hand-made case where the wake-ups matter).
#[test]
fn an_incast_with_one_frame_buffers_stalls_and_agrees() {
    for (which, vcs) in [Lazy::Credits, Lazy::PortFree]
        .into_iter()
        .flat_map(|w| [(w, 1u8), (w, 3)])
    {
        let spec: Vec<(u64, u64, u32, u32)> =
            (1..16).map(|s| (20_000, s as u64 % 3, s, 0)).collect();
        let f = flows(&spec, 16);
        let lazy = same(
            which,
            || fat_tree(1),
            cfg(vcs, 1, 1000, 0, true, Routing::Adaptive),
            &f,
        )
        .unwrap();
        assert!(stat(&lazy, "credit_stalls") > 100.0, "{lazy:?}");
    }
}

fn lazy() -> impl Strategy<Value = Lazy> {
    prop_oneof![Just(Lazy::Credits), Just(Lazy::PortFree)]
}

/// VCs in 1..=`vcs`, VC buffers of 1..=`frames` frames. (Strategies are
/// drawn in order: grouping keeps the saved regression seeds' cases.)
fn buffers(vcs: u8, frames: u64) -> impl Strategy<Value = (u8, u64)> {
    (1..=vcs, 1..=frames)
}

/// 1 to `n - 1` flows over `hosts` hosts of under `bytes` B starting
/// before `start_ns`, sorted and numbered.
fn random_flows(
    bytes: u64,
    start_ns: u64,
    hosts: u32,
    n: usize,
) -> impl Strategy<Value = Vec<Flow>> {
    prop::collection::vec((1..bytes, 0..start_ns, 0..hosts, 0..hosts), 1..n)
        .prop_map(move |spec| flows(&spec, hosts))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, .. ProptestConfig::default() })]
    #[test]
    fn lazy_paths_change_nothing_on_a_fat_tree(
        which in lazy(),
        seed in 0u64..1000,
        (vcs, frames) in buffers(4, 3),
        payload in prop_oneof![Just(512u32), Just(1000), Just(4096)],
        delay_ns in 0u64..300,
        routing in prop_oneof![Just(Routing::Ecmp), Just(Routing::Spray), Just(Routing::Adaptive)],
        paced in any::<bool>(),
        f in random_flows(40_000, 5_000, 16, 24),
    ) {
        same(which, || fat_tree(seed), cfg(vcs, frames, payload, delay_ns, paced, routing), &f)?;
    }

    #[test]
    fn lazy_paths_change_nothing_on_a_multibutterfly(
        which in lazy(),
        seed in 0u64..1000,
        (vcs, frames) in buffers(3, 2),
        m in 1u32..=3,
        delay_ns in 0u64..300,
        f in random_flows(20_000, 3_000, 16, 32),
    ) {
        let build = || {
            let mut rng = RngStreams::new(seed).stream("w");
            let mb = MultiButterfly::new(4, m, Some(&mut rng));
            (mb.graph(Rate::gbps(25)), mb)
        };
        same(which, build, cfg(vcs, frames, 512, delay_ns, true, Routing::Adaptive), &f)?;
    }

    #[test]
    fn lazy_paths_change_nothing_on_a_dragonfly(
        which in lazy(),
        frames in 1u64..=2,
        delay_ns in 0u64..300,
        ugal in any::<bool>(),
        f in random_flows(20_000, 3_000, 72, 32),
    ) {
        let build = || {
            let d = Dragonfly::balanced(72).unwrap().with_ugal(ugal);
            let mut g = d.graph(Rate::gbps(25));
            // Links of three delays (credits of three return times).
            g.delays = g
                .ports
                .iter()
                .map(|p| SimTime::ns([10, 100, 50, 190][p.tier as usize % 4]))
                .collect();
            (g, d)
        };
        same(which, build, cfg(3, frames, 512, delay_ns, true, Routing::Adaptive), &f)?;
    }
}
