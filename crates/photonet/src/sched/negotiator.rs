//! NegotiaToR Matching (Liang et al., SIGCOMM '24, §3.2, Algorithm 1) and the
//! variants of §3.5 / App. A.2, as pure functions over ToR-level requests and
//! port-level grants (no simulation state).
//!
//! # Networks (Figure 1)
//!
//! N ToRs with S uplink ports each.
//! - **Parallel network**: S AWGRs of N ports; AWGR `p` joins port `p` of every
//!   ToR, so port `p` of a source reaches port `p` of any destination. A pair
//!   can be matched on up to S ports at once.
//! - **Thin-clos**: W-port AWGRs built as Sirius builds its gratings
//!   ([`crate::sched::awgr::CyclicSchedule`], shared): ToRs are padded to S·W and
//!   split into S groups of W; port `b` of a source in group `a` reaches every
//!   ToR of group `b`, on that ToR's port `a`. Each pair has exactly one
//!   port-to-port path: source port `group(d)` → destination port `group(s)`.
//!   W = N/S gives the paper's ⌈NS/W⌉ = S² AWGRs.
//!
//! # One round (Algorithm 1)
//!
//! 1. **REQUEST** (ToR level, binary): source `s` requests destination `d` when
//!    its queue for `d` holds data (above the piggyback threshold, §3.4.1). The
//!    fabric builds the requests; here they are a list per destination.
//! 2. **GRANT** (port level, at the destination): on the parallel network one
//!    ring per ToR over the sources: the free ports are visited in index order
//!    and each gets the highest-priority eligible requester (the first at or
//!    after the pointer, clockwise), after which the pointer moves past it — so
//!    with fewer requesters than ports a source receives several ports ("m/n
//!    ports per request"). On thin-clos one ring per port over the sources that
//!    port can hear (its AWGR's group).
//! 3. **ACCEPT** (port level, at the source): each source port that received
//!    grants accepts one, by a per-port ring over destinations.
//!
//! Rings are randomly initialised ([`Rings::random`], "randomly initialize
//! rings" in both functions of Algorithm 1; the fabric re-draws them every
//! epoch by default, or keeps them across epochs); within a step a pointer
//! moves past whoever it granted or accepted, whether or not the grant is
//! accepted (RRM). The accepted grants are conflict-free: no source
//! port and no destination port is used twice, and every match is a
//! requested pair on a port pair the network connects.
//!
//! # Variants
//! - **Iterative** (App. A.2.1): further rounds on the ports left free by the
//!   previous ones ([`Matching`] carries the state between rounds).
//! - **Informative requests** (App. A.2.3): a request carries a weight (queued
//!   bytes, or a weighted head-of-line delay); GRANT orders requesters by
//!   weight (ties by ring order) instead of by ring order, and ACCEPT orders
//!   grants by the source's own weight for the destination.
//! - **ProjecToR** (App. A.2.5): per-port requests chosen by the source
//!   ([`projector_requests`]) and granted per destination port by the largest
//!   weight ([`projector_grant`]); a source port requests one destination, so
//!   every grant is accepted.

use crate::sched::awgr::CyclicSchedule;
use rand::Rng;

/// "Nobody": a free port.
pub const FREE: u32 = u32::MAX;

/// How ToR ports are wired (Figure 1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Network {
    /// S AWGRs of N ports.
    Parallel { tors: usize, ports: usize },
    /// ⌈NS/W⌉ AWGRs of W ports (the Sirius construction, padded to S·W).
    ThinClos { tors: usize, ports: usize, w: usize },
}

impl Network {
    pub fn parallel(tors: usize, ports: usize) -> Result<Network, String> {
        if tors < 2 || ports == 0 {
            return Err(format!("need ≥ 2 ToRs and ≥ 1 port (got {tors}, {ports})"));
        }
        Ok(Network::Parallel { tors, ports })
    }
    /// Thin-clos with `w`-port AWGRs; needs S·W ≥ N (W ≥ ⌈N/S⌉).
    pub fn thin_clos(tors: usize, ports: usize, w: usize) -> Result<Network, String> {
        CyclicSchedule::new(tors, ports, w)?;
        if tors < 2 {
            return Err("need ≥ 2 ToRs".into());
        }
        Ok(Network::ThinClos { tors, ports, w })
    }
    pub fn tors(&self) -> usize {
        match *self {
            Network::Parallel { tors, .. } | Network::ThinClos { tors, .. } => tors,
        }
    }
    pub fn ports(&self) -> usize {
        match *self {
            Network::Parallel { ports, .. } | Network::ThinClos { ports, .. } => ports,
        }
    }
    pub fn is_parallel(&self) -> bool {
        matches!(self, Network::Parallel { .. })
    }
    /// Group of a ToR on thin-clos (the AWGR row it sends from).
    #[inline]
    fn group(&self, tor: usize) -> usize {
        match *self {
            Network::Parallel { .. } => 0,
            Network::ThinClos { w, .. } => tor / w,
        }
    }
    /// The destination port on which `d` hears source port `src_port` of `s`,
    /// if that source port reaches `d` at all.
    #[inline]
    pub fn dst_port(&self, s: usize, d: usize, src_port: usize) -> Option<usize> {
        match *self {
            Network::Parallel { .. } => Some(src_port),
            Network::ThinClos { .. } => (self.group(d) == src_port).then(|| self.group(s)),
        }
    }
    /// The source port of `s` that reaches destination port `dst_port` of `d`,
    /// if `s` can reach that port at all.
    #[inline]
    pub fn src_port(&self, s: usize, d: usize, dst_port: usize) -> Option<usize> {
        match *self {
            Network::Parallel { .. } => Some(dst_port),
            Network::ThinClos { .. } => (self.group(s) == dst_port).then(|| self.group(d)),
        }
    }
    /// Number of GRANT rings: one per ToR (parallel) or per ToR port (thin-clos).
    fn grant_rings(&self) -> usize {
        match *self {
            Network::Parallel { tors, .. } => tors,
            Network::ThinClos { tors, ports, .. } => tors * ports,
        }
    }
    /// Sources a destination port can hear: `lo..hi` (all ToRs on the
    /// parallel network, the port's group on thin-clos).
    #[inline]
    fn sources_of_port(&self, q: usize) -> (usize, usize) {
        match *self {
            Network::Parallel { tors, .. } => (0, tors),
            Network::ThinClos { tors, w, .. } => ((q * w).min(tors), ((q + 1) * w).min(tors)),
        }
    }
}

/// Round-robin ring pointers (the highest-priority ToR of each ring).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rings {
    /// GRANT rings over sources: per destination ToR (parallel) or per
    /// destination port `d·S + q` (thin-clos).
    pub grant: Vec<u32>,
    /// ACCEPT rings over destinations, per source port `s·S + p`.
    pub accept: Vec<u32>,
}

impl Rings {
    /// Every pointer at ToR 0 (for hand-worked tests).
    pub fn zero(net: &Network) -> Rings {
        Rings {
            grant: vec![0; net.grant_rings()],
            accept: vec![0; net.tors() * net.ports()],
        }
    }
    /// Uniformly random pointers ("randomly initialize rings", Algorithm 1).
    pub fn random<R: Rng>(net: &Network, rng: &mut R) -> Rings {
        let mut r = Rings::zero(net);
        r.randomize(net, rng);
        r
    }
    /// Each pointer uniform over the ToRs its ring can actually pick (a ToR
    /// never requests or grants itself, so it is left out of its own rings).
    pub fn randomize<R: Rng>(&mut self, net: &Network, rng: &mut R) {
        let n = net.tors();
        let ports = net.ports();
        let mut pick = |lo: usize, hi: usize, me: usize| -> u32 {
            let skip = (lo..hi).contains(&me) as usize;
            if hi - lo <= skip {
                return lo as u32;
            }
            let x = lo + rng.random_range(0..hi - lo - skip);
            (if skip == 1 && x >= me { x + 1 } else { x }) as u32
        };
        for (i, p) in self.grant.iter_mut().enumerate() {
            *p = match net {
                Network::Parallel { .. } => pick(0, n, i),
                Network::ThinClos { .. } => {
                    let (lo, hi) = net.sources_of_port(i % ports);
                    pick(lo, hi, i / ports)
                }
            };
        }
        for (i, p) in self.accept.iter_mut().enumerate() {
            *p = pick(0, n, i / ports);
        }
    }
}

/// A request from `src`, with a weight (0 for binary requests).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Request {
    pub src: u32,
    pub weight: u64,
}

/// A port-level grant: destination port `dst_port` of `dst` to source port
/// `src_port` of `src`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Grant {
    pub src: u32,
    pub src_port: u32,
    pub dst: u32,
    pub dst_port: u32,
}

/// Port assignments built up over the rounds of one scheduling process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Matching {
    pub ports: usize,
    /// Per source port `s·S + p`: the destination it sends to, or [`FREE`].
    pub src: Vec<u32>,
    /// Per destination port `d·S + q`: the source it hears, or [`FREE`].
    pub dst: Vec<u32>,
}

impl Matching {
    pub fn new(net: &Network) -> Matching {
        let k = net.tors() * net.ports();
        Matching {
            ports: net.ports(),
            src: vec![FREE; k],
            dst: vec![FREE; k],
        }
    }
    pub fn clear(&mut self) {
        self.src.fill(FREE);
        self.dst.fill(FREE);
    }
    pub fn src_free(&self, s: usize, p: usize) -> bool {
        self.src[s * self.ports + p] == FREE
    }
    pub fn dst_free(&self, d: usize, q: usize) -> bool {
        self.dst[d * self.ports + q] == FREE
    }
    /// Matched source ports.
    pub fn len(&self) -> usize {
        self.src.iter().filter(|&&x| x != FREE).count()
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Ring order: `x` comes `(x - ptr) mod n` positions after the pointer.
#[inline]
fn ring_pos(x: u32, ptr: u32, n: u32) -> u32 {
    (x + n - ptr % n) % n
}

/// Scratch space reused across calls (no allocation per epoch).
#[derive(Default, Debug)]
pub struct Scratch {
    order: Vec<Request>,
    /// Grants received, bucketed per source port.
    inbox: Vec<Vec<(u32, u32)>>,
}

/// GRANT at every destination (Algorithm 1, lines 6–14). `requests[d]` holds
/// the requests `d` received, sorted by source. Only ports free in `m` are
/// granted, and only to sources whose matching port is free (iterative rounds).
/// With `weighted`, requesters are ordered by weight (descending), ties by
/// ring order. `allow(dst, src)` is asked before each grant and may refuse
/// the candidate (the stateful variant's traffic matrix); answering `true`
/// commits the grant. Grants are appended to `out`.
#[allow(clippy::too_many_arguments)]
pub fn grant(
    net: &Network,
    requests: &[Vec<Request>],
    m: &Matching,
    rings: &mut Rings,
    weighted: bool,
    allow: &mut dyn FnMut(u32, u32) -> bool,
    scratch: &mut Scratch,
    out: &mut Vec<Grant>,
) {
    let n = net.tors() as u32;
    let ports = net.ports();
    for (d, reqs) in requests.iter().enumerate() {
        if reqs.is_empty() {
            continue;
        }
        debug_assert!(reqs.windows(2).all(|w| w[0].src < w[1].src));
        match net {
            Network::Parallel { .. } => {
                // One ring for all ports: order the requesters once.
                let ptr = rings.grant[d];
                let order = &mut scratch.order;
                order.clear();
                let split = reqs.partition_point(|r| r.src < ptr);
                order.extend_from_slice(&reqs[split..]);
                order.extend_from_slice(&reqs[..split]);
                if weighted {
                    // Stable: equal weights keep ring order.
                    order.sort_by_key(|r| std::cmp::Reverse(r.weight));
                }
                let len = order.len();
                let mut next = 0usize; // position in `order` of the highest priority
                for q in 0..ports {
                    if !m.dst_free(d, q) {
                        continue;
                    }
                    // The first requester from `next` on whose port q is free.
                    let Some(k) = (0..len).map(|i| (next + i) % len).find(|&k| {
                        m.src_free(order[k].src as usize, q) && allow(d as u32, order[k].src)
                    }) else {
                        continue;
                    };
                    let s = order[k].src;
                    out.push(Grant {
                        src: s,
                        src_port: q as u32,
                        dst: d as u32,
                        dst_port: q as u32,
                    });
                    next = (k + 1) % len;
                    rings.grant[d] = (s + 1) % n;
                }
            }
            Network::ThinClos { .. } => {
                for q in 0..ports {
                    if !m.dst_free(d, q) {
                        continue;
                    }
                    let (lo, hi) = net.sources_of_port(q);
                    let a = reqs.partition_point(|r| (r.src as usize) < lo);
                    let b = reqs.partition_point(|r| (r.src as usize) < hi);
                    let ring = d * ports + q;
                    let ptr = rings.grant[ring];
                    let p = net.group(d); // the source port that reaches d
                    let order = &mut scratch.order;
                    order.clear();
                    order.extend(
                        reqs[a..b]
                            .iter()
                            .filter(|r| m.src_free(r.src as usize, p))
                            .map(|r| Request {
                                src: r.src,
                                weight: if weighted { u64::MAX - r.weight } else { 0 },
                            }),
                    );
                    order.sort_by_key(|r| (r.weight, ring_pos(r.src, ptr, n)));
                    if let Some(r) = order.iter().find(|r| allow(d as u32, r.src)) {
                        out.push(Grant {
                            src: r.src,
                            src_port: p as u32,
                            dst: d as u32,
                            dst_port: q as u32,
                        });
                        let next = if (r.src as usize + 1) < hi {
                            r.src + 1
                        } else {
                            lo as u32
                        };
                        rings.grant[ring] = next;
                    }
                }
            }
        }
    }
}

/// ACCEPT at every source port (Algorithm 1, lines 15–22): among the grants a
/// source port received, the first destination at or after its ring pointer
/// (or, with `weight`, the largest `weight(src, dst)`, ties by ring order).
/// Accepted grants are recorded in `m` and appended to `out`.
pub fn accept(
    net: &Network,
    grants: &[Grant],
    m: &mut Matching,
    rings: &mut Rings,
    weight: Option<&dyn Fn(u32, u32) -> u64>,
    scratch: &mut Scratch,
    out: &mut Vec<Grant>,
) {
    let n = net.tors() as u32;
    let ports = net.ports();
    let k = net.tors() * ports;
    if scratch.inbox.len() != k {
        scratch.inbox = vec![Vec::new(); k];
    }
    let mut touched: Vec<usize> = Vec::new();
    for g in grants {
        let i = g.src as usize * ports + g.src_port as usize;
        if scratch.inbox[i].is_empty() {
            touched.push(i);
        }
        scratch.inbox[i].push((g.dst, g.dst_port));
    }
    touched.sort_unstable();
    for i in touched {
        let s = (i / ports) as u32;
        let ptr = rings.accept[i];
        let inbox = &scratch.inbox[i];
        let &(d, q) = inbox
            .iter()
            .min_by_key(|(d, _)| {
                let w = weight.map_or(0, |f| u64::MAX - f(s, *d));
                (w, ring_pos(*d, ptr, n))
            })
            .expect("non-empty");
        scratch.inbox[i].clear();
        debug_assert!(m.src[i] == FREE && m.dst[d as usize * ports + q as usize] == FREE);
        m.src[i] = d;
        m.dst[d as usize * ports + q as usize] = s;
        rings.accept[i] = (d + 1) % n;
        out.push(Grant {
            src: s,
            src_port: (i % ports) as u32,
            dst: d,
            dst_port: q,
        });
    }
}

/// `rounds` rounds of NegotiaToR Matching on the same requests, without the
/// pipeline (for tests and for the analysis of §3.2.2): returns the numbers of
/// grants and of accepts of the first round, and the final matching.
pub fn negotiate(
    net: &Network,
    requests: &[Vec<Request>],
    rounds: usize,
    rings: &mut Rings,
) -> (usize, usize, Matching) {
    let mut m = Matching::new(net);
    let mut scratch = Scratch::default();
    let (mut g, mut a) = (Vec::new(), Vec::new());
    let mut first = (0, 0);
    for r in 0..rounds {
        g.clear();
        a.clear();
        grant(
            net,
            requests,
            &m,
            rings,
            false,
            &mut |_, _| true,
            &mut scratch,
            &mut g,
        );
        accept(net, &g, &mut m, rings, None, &mut scratch, &mut a);
        if r == 0 {
            first = (g.len(), a.len());
        }
        if g.is_empty() {
            break;
        }
    }
    (first.0, first.1, m)
}

/// ProjecToR-style per-port requests (App. A.2.5) at one source `s`: its
/// destinations `bundles` = `(dst, bundles, weight)` (a bundle asks for one
/// port; weight = the waiting delay that orders them) are ordered by weight
/// (descending, ties by destination), and free ports are handed out one
/// bundle at a time. `interleave`: a destination's second bundle comes after
/// every destination's first (and so on); otherwise strictly by weight, so a
/// destination's bundles, which share its weight, take ports one after
/// another before the next destination's. On thin-clos a destination can
/// only be requested on the one port that reaches it. Returns `(src_port, dst)`.
pub fn projector_requests(
    net: &Network,
    s: usize,
    bundles: &mut [(u32, u32, u64)],
    interleave: bool,
    out: &mut Vec<(u32, u32)>,
) {
    bundles.sort_by(|a, b| b.2.cmp(&a.2).then(a.0.cmp(&b.0)));
    let ports = net.ports();
    let mut used = vec![false; ports];
    let mut left = ports;
    // A free port for `d`'s bundle (`first`: its first one).
    let pick = |used: &[bool], d: u32, first: bool| match net {
        Network::Parallel { .. } => used.iter().position(|u| !u),
        Network::ThinClos { .. } => {
            let p = net.group(d as usize);
            (!used[p] && first).then_some(p)
        }
    };
    if !interleave {
        for &(d, count, _) in bundles.iter() {
            for k in 0..count {
                if left == 0 {
                    return;
                }
                let Some(p) = pick(&used, d, k == 0) else {
                    break;
                };
                used[p] = true;
                left -= 1;
                out.push((p as u32, d));
            }
        }
        return;
    }
    let mut round = 0u32;
    while left > 0 {
        let mut any = false;
        for &(d, count, _) in bundles.iter() {
            if count <= round || left == 0 {
                continue;
            }
            if let Some(p) = pick(&used, d, round == 0) {
                used[p] = true;
                left -= 1;
                any = true;
                out.push((p as u32, d));
            }
        }
        if !any {
            break;
        }
        round += 1;
    }
    let _ = s;
}

/// ProjecToR GRANT: each destination port grants the per-port request with the
/// largest weight (ties: GRANT ring order). `requests` = `(src, src_port, dst,
/// weight)`. Returns grants, which the sources accept unconditionally.
pub fn projector_grant(
    net: &Network,
    requests: &mut [(u32, u32, u32, u64)],
    rings: &mut Rings,
    out: &mut Vec<Grant>,
) {
    let n = net.tors() as u32;
    let ports = net.ports();
    let ring_of = |d: usize, q: usize| match net {
        Network::Parallel { .. } => d,
        Network::ThinClos { .. } => d * ports + q,
    };
    // Group by (dst, dst_port).
    let key = |r: &(u32, u32, u32, u64)| {
        let q = net
            .dst_port(r.0 as usize, r.2 as usize, r.1 as usize)
            .unwrap_or(0);
        (r.2, q as u32)
    };
    requests.sort_by_key(|r| (key(r), u64::MAX - r.3, r.0));
    let mut i = 0;
    while i < requests.len() {
        let (d, q) = key(&requests[i]);
        let mut j = i;
        while j < requests.len() && key(&requests[j]) == (d, q) {
            j += 1;
        }
        let ring = ring_of(d as usize, q as usize);
        let ptr = rings.grant[ring];
        let top = requests[i].3;
        let r = requests[i..j]
            .iter()
            .filter(|r| r.3 == top)
            .min_by_key(|r| ring_pos(r.0, ptr, n))
            .expect("non-empty");
        out.push(Grant {
            src: r.0,
            src_port: r.1,
            dst: d,
            dst_port: q,
        });
        rings.grant[ring] = (r.0 + 1) % n;
        i = j;
    }
}

/// Traffic-aware selective relay (App. A.2.2), the source's choice: up to
/// `fanout` intermediate ToRs for source `s`'s elephant data to `d`, scanning
/// ToRs cyclically from `start`. A ToR m is a candidate unless it is `s` or
/// `d`, `s` already requests m directly (the s → m link carries direct
/// data), or `s`'s egress port towards m (`port_to(m)`) carries high-volume
/// direct traffic (`loaded[port]`: bandwidth competition on a shared link).
/// The intermediate's own checks (its queue and its egress port towards d)
/// come at GRANT.
#[allow(clippy::too_many_arguments)] // the source's local view, each piece named
pub fn relay_candidates(
    n: usize,
    s: usize,
    d: usize,
    port_to: &dyn Fn(usize) -> usize,
    loaded: &[bool],
    direct: &dyn Fn(usize) -> bool,
    fanout: usize,
    start: usize,
    out: &mut Vec<u32>,
) {
    out.clear();
    if fanout == 0 {
        return;
    }
    for i in 0..n {
        let m = (start + i) % n;
        if m == s || m == d || direct(m) || loaded[port_to(m)] {
            continue;
        }
        out.push(m as u32);
        if out.len() == fanout {
            return;
        }
    }
}

/// §3.2.2: the expected acceptance probability of a grant when each of the
/// `n` possible granters of a source port grants it with probability 1/n:
/// E[1/(X+1)], X ~ B(n−1, 1/n), = 1 − (1 − 1/n)^n.
pub fn expected_match_ratio(n: usize) -> f64 {
    let n = n as f64;
    1.0 - (1.0 - 1.0 / n).powf(n)
}

#[cfg(test)]
mod tests;
