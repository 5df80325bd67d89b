//! The packet-level substrate shared by buffered (electrical) fabrics:
//! packets from a pool, links with serialisation and propagation,
//! output-queued switch ports with byte buffers, drop-tail, ECN marking and
//! PFC, routing policies over a topology's equal-cost next hops, and host
//! transports (DCTCP, paced) delivering in order, exactly once, to the
//! recorder.
//!
//! Layer 2: it uses only the core modules (units, rng, flow, pool, timer,
//! delivery, recorder); fabrics (`fabric::fat_tree`) build a [`sim::Graph`]
//! and a [`route::Router`] and drive a [`sim::Network`].
//!
//! - [`calendar`]: the event queue (a timing wheel; why not the core's
//!   binary heap: see its doc);
//! - [`route`]: ECMP hashing, spraying, adaptive choice, the `Router` hook;
//! - [`dctcp`]: DCTCP window arithmetic;
//! - [`sim`]: the network itself (ports, hosts, transports, PFC, credits),
//!   a folder: `config` (what a topology hands it), `ports`, `transport`,
//!   `stats`, and in `mod.rs` the [`Network`] and its event loop, including
//!   the hooks for a fabric that drives a network from outside and shares
//!   its links — growable paced flows ([`Network::extend_flow`]), host
//!   pause / backlog queries, PFC reaction delays drawn from a range,
//!   strict-priority outside load on a port, a delivery log, `run_until`;
//! - [`ndp`]: NDP hosts and trimming switches over the same graph and
//!   routers, with an event loop of its own (`transport = "ndp"`);
//! - [`external`]: built on those hooks through the network's public API,
//!   [`ClassFlows`] (an outside fabric's traffic classes as growing net
//!   flows; REACToR's EPS, Mordia's packet switch) and [`StarRouter`].
//!
//! # Building a topology on it (API)
//! 1. Number nodes: hosts `0..hosts` first (host `h`'s NIC is port `h`),
//!    then switches. Describe every directed link as a [`PortSpec`] (far
//!    node, rate, a tier index for statistics) in a [`Graph`], with
//!    `reverse[p]` = the port of the far node that points back.
//! 2. Implement [`Router`] for the topology: `candidates(node, dst)` returns
//!    a contiguous range of output ports of switch `node` (the policy
//!    [`Routing`] — ECMP / spray / adaptive — picks one); optionally
//!    override `route(&mut Hop, load, rng)` to choose the port yourself
//!    (UGAL/Valiant: `load(p)` gives a port's queued bytes, `hop.tag` is a
//!    per-packet u32 that travels with the packet, 0 at injection), and
//!    `vc(&Hop, out_port)` to choose the virtual channel on the output link
//!    (called at the source NIC with `hop.in_port == u32::MAX` and at every
//!    switch; must be `< hop.vcs`; default [`hop_count_vc`]).
//! 3. Fill a [`NetConfig`]: `flow_control: FlowControl::Credit(CreditConfig
//!    { vcs, vc_buffer, credit_delay })` for credit-based flow control
//!    (credits in bytes per (link, VC); `vc_buffer` ≥ payload + header);
//!    `FlowControl::Pfc(..)` or `None` otherwise; `Transport::Paced` for
//!    window-free line-rate sending or `Transport::Dctcp(..)`.
//! 4. `Network::new(cfg, graph, router)`, then drive it like a fabric:
//!    `add_flow(now, &flow, rec)`, `next_event()`, `advance(now, rec)`;
//!    `stats()` (incl. `credit_stalls`, `peak_vc_buffer_bytes`),
//!    `check_invariants()`, `completed_flows()`.

pub mod calendar;
pub mod dctcp;
pub mod dragonfly;
pub mod external;
pub mod multibutterfly;
pub mod ndp;
pub mod route;
pub mod sim;

pub use external::{ClassFlows, StarRouter};
pub use route::{hop_count_vc, Candidates, Hop, Router, Routing};
pub use sim::{
    CreditConfig, DctcpConfig, FlowControl, Graph, NetConfig, Network, NicQueues, PfcConfig,
    PortSpec, Priority, Transport, MAX_CLASSES, MAX_VCS,
};
