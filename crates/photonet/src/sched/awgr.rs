//! The static cyclic AWGR schedule: N nodes with U uplinks each on U² gratings
//! of G ports, every ordered pair connected once per epoch of G slots. Sirius
//! runs all its traffic over it; NegotiaToR's thin-clos uses it for its
//! predefined phase and its port-to-port paths.
//!
//! # Construction
//!
//! N nodes, U uplinks per node, G-port gratings (AWGRs); one epoch is G slots.
//!
//! 1. Pad N up to N' = U·G. Padding nodes N..N'-1 are *dark*: they never send or
//!    receive (their slots stay idle). U·G < N is an error: some node would have
//!    no grating port.
//! 2. Split the N' nodes into U groups of G: node `i` is `(a, k) = (i / G, i % G)`.
//! 3. There are U² gratings. Grating `(a, b)` takes uplink `b` of every node of
//!    group `a` on its inputs (input `k` = node `(a, k)`) and feeds receive port `a`
//!    of every node of group `b` (output `j` = node `(b, j)`).
//! 4. In slot `t` every grating connects input `k` to output `(k + t) mod G` (the
//!    lasers step through the wavelengths in the same cyclic order).
//!
//! So in slot `t`, node `(a, k)` on uplink `b` reaches node `(b, (k + t) mod G)`,
//! and node `(b, j)` hears on receive port `a` exactly one sender, `(a, (j − t) mod G)`.
//! Over one epoch every ordered pair `(s, d)` (including `s = d`, which the fabric
//! leaves idle) is connected exactly once — on uplink `d / G` at slot offset
//! `(d mod G − s mod G) mod G` — and no receive port ever hears two senders in one
//! slot. Each node talks to every other node once per epoch, so each pair gets
//! 1/N' of a node's uplink capacity.
//!

/// The static cyclic schedule of an AWGR fabric (Sirius, NegotiaToR thin-clos).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CyclicSchedule {
    n: usize,
    u: usize,
    g: usize,
}

impl CyclicSchedule {
    /// A schedule for `n` nodes with `u` uplinks each and `g`-port gratings.
    pub fn new(n: usize, u: usize, g: usize) -> Result<CyclicSchedule, String> {
        if n == 0 {
            return Err("need at least one node".into());
        }
        if u == 0 {
            return Err("need at least one uplink per node".into());
        }
        if g == 0 {
            return Err("gratings need at least one port".into());
        }
        let padded = u.checked_mul(g).ok_or("U·G overflows")?;
        if padded < n {
            return Err(format!(
                "U·G = {u}·{g} = {padded} < {n} nodes: not every node gets a grating port"
            ));
        }
        Ok(CyclicSchedule { n, u, g })
    }

    /// Real (non-dark) nodes N.
    pub fn nodes(&self) -> usize {
        self.n
    }
    /// Uplinks per node U.
    pub fn uplinks(&self) -> usize {
        self.u
    }
    /// Grating ports G = slots per epoch.
    pub fn ports(&self) -> usize {
        self.g
    }
    /// N' = U·G, real plus dark nodes.
    pub fn padded(&self) -> usize {
        self.u * self.g
    }
    /// Padding nodes never send or receive.
    pub fn is_dark(&self, node: usize) -> bool {
        node >= self.n
    }

    /// The node reached by `node` on `uplink` in slot `slot` (taken modulo G).
    #[inline]
    pub fn dest(&self, node: usize, uplink: usize, slot: usize) -> usize {
        debug_assert!(node < self.padded() && uplink < self.u);
        let k = node % self.g;
        uplink * self.g + (k + slot % self.g) % self.g
    }

    /// The receive port on which the node reached by `node`'s uplink hears it:
    /// the sender's group (grating `(a, b)` feeds receive port `a`).
    #[inline]
    pub fn rx_port(&self, node: usize, _uplink: usize) -> usize {
        node / self.g
    }

    /// The node heard by `node` on receive port `port` in slot `slot`.
    pub fn sender(&self, node: usize, port: usize, slot: usize) -> usize {
        let j = node % self.g;
        port * self.g + (j + self.g - slot % self.g) % self.g
    }

    /// `(uplink, slot offset within the epoch)` on which `src` reaches `dst`.
    #[inline]
    pub fn link(&self, src: usize, dst: usize) -> (usize, usize) {
        let (k, j) = (src % self.g, dst % self.g);
        (dst / self.g, (j + self.g - k) % self.g)
    }
}

/// The default grating size: the smallest G with U'·G >= N, i.e. ceil(N / U').
pub fn default_ports(nodes: usize, uplinks: usize) -> usize {
    nodes.div_ceil(uplinks.max(1)).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn sizes_and_dark_nodes() {
        let s = CyclicSchedule::new(128, 12, 11).unwrap();
        assert_eq!(s.padded(), 132);
        assert!(s.is_dark(128) && s.is_dark(131) && !s.is_dark(127));
        assert_eq!(default_ports(128, 12), 11);
        assert_eq!(default_ports(128, 8), 16);
        assert!(CyclicSchedule::new(128, 12, 10)
            .unwrap_err()
            .contains("120 < 128"));
    }

    #[test]
    fn the_papers_four_node_example() {
        // Fig. 5: 4 nodes, 2 uplinks, 2-port gratings, epoch of 2 slots.
        let s = CyclicSchedule::new(4, 2, 2).unwrap();
        // Node 0 = (0,0): uplink 0 reaches group 0 = {0, 1}, uplink 1 group 1 = {2, 3}.
        assert_eq!([s.dest(0, 0, 0), s.dest(0, 0, 1)], [0, 1]);
        assert_eq!([s.dest(0, 1, 0), s.dest(0, 1, 1)], [2, 3]);
        assert_eq!(s.link(0, 3), (1, 1));
        assert_eq!(s.sender(3, 0, 1), 0);
        assert_eq!(s.rx_port(0, 1), 0);
    }
    proptest! {
        #[test]
        fn schedule_is_contention_free_and_fair(n in 1usize..70, u in 1usize..9, extra in 0usize..3) {
            let g = default_ports(n, u) + extra;
            let s = CyclicSchedule::new(n, u, g).unwrap();
            let np = s.padded();
            let mut pair_seen = vec![0u32; np * np];
            for t in 0..g {
                // (receiver, receive port) pairs used in this slot.
                let mut port_used = vec![false; np * u];
                for src in 0..np {
                    for b in 0..u {
                        let d = s.dest(src, b, t);
                        prop_assert!(d < np);
                        let port = s.rx_port(src, b);
                        prop_assert!(port < u);
                        prop_assert!(!port_used[d * u + port], "slot {t}: port {port} of {d} hears two senders");
                        port_used[d * u + port] = true;
                        prop_assert_eq!(s.sender(d, port, t), src);
                        prop_assert_eq!(s.link(src, d), (b, t));
                        pair_seen[src * np + d] += 1;
                    }
                }
                // The schedule repeats every epoch.
                prop_assert_eq!(s.dest(0, 0, t + g), s.dest(0, 0, t));
            }
            prop_assert!(pair_seen.iter().all(|&c| c == 1), "every ordered pair exactly once per epoch");
        }

        #[test]
        fn too_few_ports_is_an_error(n in 2usize..200, u in 1usize..16) {
            let g = default_ports(n, u);
            prop_assert!(CyclicSchedule::new(n, u, g).is_ok());
            if g > 1 && u * (g - 1) < n {
                prop_assert!(CyclicSchedule::new(n, u, g - 1).is_err());
            }
        }
    }
}
