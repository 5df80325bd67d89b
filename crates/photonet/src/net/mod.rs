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
//! - [`calendar`]: the event queue (a timing wheel; measured against
//!   [`radix`], a monotone radix heap, and the core binary heap);
//! - [`route`]: ECMP hashing, spraying, adaptive choice, the `Router` hook;
//! - [`dctcp`]: DCTCP window arithmetic;
//! - [`sim`]: the network itself (ports, hosts, transports, PFC).

pub mod calendar;
pub mod dctcp;
pub mod dragonfly;
pub mod multibutterfly;
pub mod radix;
pub mod route;
pub mod sim;

pub use route::{Candidates, Router, Routing};
pub use sim::{
    DctcpConfig, FlowControl, Graph, NetConfig, Network, PfcConfig, PortSpec, Transport,
};
