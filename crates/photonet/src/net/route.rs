//! Routing: which of several equal-cost output ports a packet takes.
//!
//! A topology answers, per switch and destination, with the contiguous range
//! of minimal (up-down) next-hop ports ([`Router::candidates`]); a policy
//! ([`Routing`]) picks one of them. The policies are pure functions of their
//! inputs, testable without a simulation:
//! - per-flow ECMP: a hash of (flow, direction, switch, seed) — every packet
//!   of a flow takes one path; ACKs hash separately;
//! - per-packet spraying: a uniformly random candidate per packet;
//! - adaptive: the candidate with the least backlog (bytes not yet
//!   serialised), ties broken by a random rotation.
//!
//! Another topology (a dragonfly with UGAL, say) implements [`Router`] and may
//! return non-minimal candidates; the policies do not care what the ports are.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How a switch picks among equal-cost next hops.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Routing {
    /// Per-flow ECMP: a hash of the flow picks the port at every switch.
    Ecmp,
    /// Per-packet spraying: a uniformly random port for every packet.
    Spray,
    /// Adaptive: the port with the least queued bytes (random among ties).
    Adaptive,
}

/// A contiguous range of candidate output ports `first .. first + count`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Candidates {
    pub first: u32,
    pub count: u32,
}

/// What a routing hook sees of a packet at a node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hop {
    /// The node it is at: a switch, or the source host when it is injected
    /// at its NIC ([`Router::vc`] only).
    pub node: u32,
    pub flow: u32,
    /// Destination host.
    pub dst: u32,
    /// The port (link) it arrived by; `u32::MAX` at injection.
    pub in_port: u32,
    /// The virtual channel it arrived on (0 at injection).
    pub vc: u8,
    /// Virtual channels per link (1 unless `FlowControl::Credit`).
    pub vcs: u8,
    /// Router scratch carried by the packet from hop to hop (0 at
    /// injection; ACKs start again at 0), e.g. a Valiant/UGAL intermediate
    /// group. Written back from [`Router::route`].
    pub tag: u32,
    /// An ACK (they travel the reverse direction as separate packets).
    pub ack: bool,
}

/// The routing hook of a topology.
///
/// - [`candidates`](Router::candidates): the minimal next hops of a packet
///   for `dst` at switch `node` (a node index as the topology numbers them),
///   among which the configured [`Routing`] policy picks. Required.
/// - [`route`](Router::route): full control (non-minimal, UGAL, Valiant):
///   return `Some(port)` to bypass `candidates` and the policy. `load(p)` is
///   the bytes queued at port `p` (lossy: unsent backlog; lossless: bytes
///   queued or on the wire, +1 if busy); `hop.tag` may be updated and
///   travels with the packet. Default: `None`.
/// - [`vc`](Router::vc): with credit flow control, the virtual channel the
///   packet takes on output port `out` (called at every switch and at the
///   source NIC, after the port is chosen); must be `< hop.vcs`. Default:
///   by hop count, `min(links already crossed, vcs − 1)` — 0 on the NIC
///   link, the arrival VC + 1 afterwards.
pub trait Router {
    fn candidates(&self, node: u32, dst: u32) -> Candidates;

    #[inline]
    fn route(
        &self,
        _hop: &mut Hop,
        _load: &dyn Fn(u32) -> u64,
        _rng: &mut crate::rng::SimRng,
    ) -> Option<u32> {
        None
    }

    #[inline]
    fn vc(&self, hop: &Hop, _out: u32) -> u8 {
        hop_count_vc(hop)
    }
}

/// The default VC assignment: by hop count, capped at the last VC (0 on the
/// source NIC's link, then arrival VC + 1).
#[inline]
pub fn hop_count_vc(hop: &Hop) -> u8 {
    if hop.in_port == u32::MAX {
        0
    } else {
        (hop.vc + 1).min(hop.vcs - 1)
    }
}

/// A 64-bit finaliser (splitmix64): a good mix of all input bits.
#[inline]
pub fn mix64(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// Maps a uniform 64-bit value onto `0..n` (multiply-high, no division).
#[inline]
pub fn reduce(h: u64, n: u32) -> u32 {
    (((h >> 32) * n as u64) >> 32) as u32
}

/// The ECMP choice among `n` ports for `flow` (and direction `ack`) at switch
/// `node` under `salt` (a per-run value).
#[inline]
pub fn ecmp_choice(flow: u32, ack: bool, node: u32, salt: u64, n: u32) -> u32 {
    let key = ((flow as u64) << 1 | ack as u64) ^ ((node as u64) << 33) ^ salt;
    reduce(mix64(key), n)
}

/// The adaptive choice: the index of the smallest `backlog(i)` over `0..n`,
/// scanning from `start` (a random rotation) so that ties are spread.
#[inline]
pub fn least_loaded(n: u32, start: u32, mut backlog: impl FnMut(u32) -> u64) -> u32 {
    let mut best = start % n;
    let mut best_b = backlog(best);
    for k in 1..n {
        if best_b == 0 {
            break;
        }
        let i = (start + k) % n;
        let b = backlog(i);
        if b < best_b {
            best = i;
            best_b = b;
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ecmp_is_per_flow_and_spreads_flows_evenly() {
        // One flow always takes the same port at a switch ...
        let a = ecmp_choice(17, false, 5, 99, 8);
        assert!((0..10).all(|_| ecmp_choice(17, false, 5, 99, 8) == a));
        // ... and 80,000 flows spread within 3 % of 1/8 per port.
        let mut count = [0u32; 8];
        for f in 0..80_000 {
            count[ecmp_choice(f, false, 5, 99, 8) as usize] += 1;
        }
        for c in count {
            assert!((c as f64 - 10_000.0).abs() < 300.0, "{count:?}");
        }
        // Different switches and the reverse direction hash independently.
        let same = (0..1000)
            .filter(|&f| ecmp_choice(f, false, 5, 1, 8) == ecmp_choice(f, false, 6, 1, 8))
            .count();
        assert!(same < 200, "{same}");
        let same = (0..1000)
            .filter(|&f| ecmp_choice(f, false, 5, 1, 8) == ecmp_choice(f, true, 5, 1, 8))
            .count();
        assert!(same < 200, "{same}");
    }

    #[test]
    fn reduce_covers_the_range() {
        assert_eq!(reduce(0, 7), 0);
        assert_eq!(reduce(u64::MAX, 7), 6);
        let mut seen = [false; 7];
        for i in 0..1000u64 {
            seen[reduce(mix64(i), 7) as usize] = true;
        }
        assert!(seen.iter().all(|&s| s));
    }

    #[test]
    fn hop_count_vcs_count_links_and_stop_at_the_last_vc() {
        let hop = |in_port, vc, vcs| Hop {
            node: 9,
            flow: 0,
            dst: 1,
            in_port,
            vc,
            vcs,
            tag: 0,
            ack: false,
        };
        // Injection: VC 0 whatever the count.
        assert_eq!(hop_count_vc(&hop(u32::MAX, 0, 3)), 0);
        // A packet that has crossed i links takes VC i, capped at vcs - 1.
        let mut vc = 0;
        let mut seen = vec![];
        for _ in 0..5 {
            vc = hop_count_vc(&hop(4, vc, 3));
            seen.push(vc);
        }
        assert_eq!(seen, [1, 2, 2, 2, 2]);
        assert_eq!(hop_count_vc(&hop(4, 0, 1)), 0);
    }

    #[test]
    fn least_loaded_picks_the_minimum_and_rotates_ties() {
        let q = [5u64, 3, 9, 3];
        assert_eq!(least_loaded(4, 0, |i| q[i as usize]), 1);
        assert_eq!(least_loaded(4, 2, |i| q[i as usize]), 3);
        assert_eq!(least_loaded(4, 1, |i| q[i as usize]), 1);
        let z = [0u64; 4];
        assert_eq!(least_loaded(4, 3, |i| z[i as usize]), 3);
    }
}
