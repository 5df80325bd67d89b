//! What a run reports: the network's counters, its statistics, per-port
//! counts and queue lengths, flows completed, and the invariant check.

use super::ports::{eff_load, lz_parts, LZ_FLAG, TX_LAZY};
use super::{FlowControl, Network, Transport};
use crate::net::route::Router;
use crate::units::SimTime;

/// Counters of the whole network.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Counters {
    pub(super) data_sent: u64,
    pub(super) data_delivered: u64,
    pub(super) acks: u64,
    pub(super) hops: u64,
    pub(super) drops: u64,
    pub(super) retransmissions: u64,
    pub(super) fast_retransmits: u64,
    pub(super) timeouts: u64,
    /// Timeouts of a flow none of whose packets or ACKs was lost since its
    /// previous timeout (the packet resent was not lost).
    pub(super) spurious_timeouts: u64,
    /// Data packets' wait at the sending NIC before their first bit leaves:
    /// total and largest, ps.
    pub(super) nic_wait: u64,
    pub(super) nic_wait_max: u64,
    pub(super) duplicates: u64,
    pub(super) early: u64,
    pub(super) lost: u64,
    pub(super) lost_data: u64,
    pub(super) credit_stalls: u64,
    /// Credits: the most bytes any (link, VC) input buffer held.
    pub(super) peak_vc_bytes: u64,
}

impl Counters {
    /// The network totals, by name, in the order `Network::stats` reports
    /// them (before `peak_packets_in_flight`, the network's own).
    fn totals(&self) -> [(&'static str, f64); 15] {
        [
            ("data_packets_sent", self.data_sent as f64),
            ("data_packets_delivered", self.data_delivered as f64),
            ("acks", self.acks as f64),
            ("packet_hops", self.hops as f64),
            ("drops", self.drops as f64),
            ("random_losses", self.lost as f64),
            ("random_data_losses", self.lost_data as f64),
            ("retransmissions", self.retransmissions as f64),
            ("fast_retransmits", self.fast_retransmits as f64),
            ("timeouts", self.timeouts as f64),
            ("spurious_timeouts", self.spurious_timeouts as f64),
            (
                "nic_wait_mean_us",
                self.nic_wait as f64 / 1e6 / self.data_sent.max(1) as f64,
            ),
            ("nic_wait_max_us", self.nic_wait_max as f64 / 1e6),
            ("duplicate_packets", self.duplicates as f64),
            ("reordered_packets", self.early as f64),
        ]
    }
}

impl<R: Router> Network<R> {
    /// Statistics: network totals, then per tier of ports.
    pub fn stats(&self) -> Vec<(String, f64)> {
        let mut out: Vec<(String, f64)> = self
            .n
            .totals()
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        out.push((
            "peak_packets_in_flight".into(),
            (self.peak_events as f64).max(self.q.pool.high_water() as f64),
        ));
        let tiers = &self.graph.tiers;
        let mut peak = vec![0u64; tiers.len()];
        let mut drops = vec![0u64; tiers.len()];
        let mut marks = vec![0u64; tiers.len()];
        let mut pause = vec![0u64; tiers.len()];
        let mut pauses = vec![0u64; tiers.len()];
        for (i, (p, s)) in self.ports.iter().zip(&self.graph.ports).enumerate() {
            let t = s.tier as usize;
            peak[t] = peak[t].max(if self.q.on() {
                self.q.qports[i].peak_ingress.max(p.peak)
            } else {
                p.peak_bytes(false)
            });
            drops[t] += self.counts[i].drops;
            marks[t] += self.counts[i].marks;
            if let Some(q) = self.q.pfc_time.get(i) {
                pause[t] += q[0];
                pauses[t] += q[1];
            }
        }
        let total = |v: &[u64]| v.iter().sum::<u64>() as f64;
        out.push(("ecn_marks".into(), total(&marks)));
        out.push((
            "peak_queue_bytes".into(),
            peak.iter().copied().max().unwrap_or(0) as f64,
        ));
        if matches!(self.cfg.flow_control, FlowControl::Pfc(_)) {
            out.push(("pfc_pauses".into(), total(&pauses)));
            out.push(("pfc_pause_time_us".into(), total(&pause) / 1e6));
        }
        if matches!(self.cfg.flow_control, FlowControl::Pfc(_)) && self.q.class_pause.len() > 1 {
            for (c, t) in self.q.class_pause.iter().enumerate() {
                out.push((format!("pfc_pause_time_us.class{c}"), *t as f64 / 1e6));
            }
        }
        if self.q.credit {
            out.push(("credit_stalls".into(), self.n.credit_stalls as f64));
            out.push(("peak_vc_buffer_bytes".into(), self.n.peak_vc_bytes as f64));
        }
        for (t, name) in tiers.iter().enumerate() {
            out.push((format!("peak_queue_bytes.{name}"), peak[t] as f64));
            out.push((format!("drops.{name}"), drops[t] as f64));
            out.push((format!("ecn_marks.{name}"), marks[t] as f64));
            if matches!(self.cfg.flow_control, FlowControl::Pfc(_)) {
                out.push((format!("pfc_pause_time_us.{name}"), pause[t] as f64 / 1e6));
            }
        }
        out
    }

    /// Per switch port: (peak buffered bytes, drops, ECN marks, PFC pause ps).
    pub fn port_stats(&self, port: u32) -> (u64, u64, u64, u64) {
        let p = &self.ports[port as usize];
        let q = self.q.qports.get(port as usize);
        (
            q.map_or(p.peak_bytes(false), |q| q.peak_ingress.max(p.peak)),
            self.counts[port as usize].drops,
            self.counts[port as usize].marks,
            self.q.pfc_time.get(port as usize).map_or(0, |q| q[0]),
        )
    }

    pub fn drops(&self) -> u64 {
        self.n.drops
    }
    pub fn timeouts(&self) -> u64 {
        self.n.timeouts
    }
    pub fn retransmissions(&self) -> u64 {
        self.n.retransmissions
    }
    pub fn data_delivered(&self) -> u64 {
        self.n.data_delivered
    }
    pub fn packet_hops(&self) -> u64 {
        self.n.hops
    }
    /// Flow `f`'s congestion window, packets.
    pub fn cwnd(&self, f: u32) -> f64 {
        self.h.win[f as usize].cc.cwnd
    }
    /// Bytes buffered at port `p` at `now` (lossy: those whose last bit has
    /// not left yet).
    pub fn queue_bytes(&self, p: u32, now: SimTime) -> u64 {
        if self.q.on() {
            let (q, w) = (&self.q.qports[p as usize], self.q.qload[p as usize]);
            if w & LZ_FLAG != 0 {
                let load = eff_load(w, p, &self.bound);
                return load.saturating_sub(1);
            }
            return w - q.busy as u64;
        }
        self.ports[p as usize].backlog(now.0, || self.graph.ports[p as usize].rate)
    }

    /// Checks buffers, packet conservation and transport bookkeeping.
    pub fn check_invariants(&self) -> Result<(), String> {
        let hosts = self.graph.hosts as usize;
        let mut queued = 0u64;
        for (i, p) in self.ports.iter().enumerate() {
            if self.q.on() {
                let q = &self.q.qports[i];
                if matches!(self.cfg.flow_control, FlowControl::Pfc(_))
                    && q.ingress > self.cfg.buffer
                {
                    return Err(format!(
                        "net: link {i} holds {} B at its far end, above the {} B buffer",
                        q.ingress, self.cfg.buffer
                    ));
                }
                let lanes = &self.q.lanes[i * self.q.vcs as usize..(i + 1) * self.q.vcs as usize];
                let (bytes, waiting) = match &self.pf {
                    Some(pf) => pf.held(i),
                    None => (
                        lanes
                            .iter()
                            .flat_map(|l| self.q.pool.iter(&l.queue))
                            .map(|k| self.q.pool[k].wire as u64)
                            .sum(),
                        lanes.iter().map(|l| l.queue.len() as u64).sum(),
                    ),
                };
                let on_wire = if q.busy { q.tx_wire as u64 } else { 0 };
                let w = self.q.qload[i];
                let load = if w & LZ_FLAG != 0 {
                    lz_parts(w).1 + 1
                } else {
                    w
                };
                let occ = load.saturating_sub(q.busy as u64);
                if load < q.busy as u64 || bytes + on_wire != occ {
                    return Err(format!(
                        "net: port {i} counts {occ} B (load {load}) but holds {} B",
                        bytes + on_wire
                    ));
                }
                let (lz_end, lz_wire) = lz_parts(w);
                if w & LZ_FLAG != 0
                    && (!q.busy
                        || q.queued != 0
                        || q.tx_inp != TX_LAZY
                        || lz_wire != q.tx_wire as u64
                        || lz_end != p.busy_until)
                {
                    return Err(format!(
                        "net: port {i} frees lazily at {} but is busy {}, queues {}, sends {} B until {}",
                        lz_end,
                        q.busy,
                        q.queued,
                        q.tx_wire,
                        p.busy_until
                    ));
                }
                if waiting != q.queued as u64 {
                    return Err(format!(
                        "net: port {i} counts {} packets waiting but holds {waiting}",
                        q.queued
                    ));
                }
                // (pFabric's queues are not in the pool.)
                queued += waiting * self.pf.is_none() as u64;
                if let FlowControl::Credit(c) = self.cfg.flow_control {
                    for (v, l) in lanes.iter().enumerate() {
                        if l.far > c.vc_buffer || l.credits + l.pend as u64 > c.vc_buffer {
                            return Err(format!(
                                "net: link {i} VC {v}: {} B buffered at the far end, {} B of credit, with {} B per VC",
                                l.far, l.credits, c.vc_buffer
                            ));
                        }
                    }
                }
                if !self.lossless() && i >= hosts && occ > self.cfg.buffer && self.pf.is_none() {
                    return Err(format!(
                        "net: port {i} holds {} B, above the {} B buffer",
                        occ, self.cfg.buffer
                    ));
                }
            } else if i >= hosts {
                // The unsent backlog never exceeds the buffer: the latest
                // departure is at most one buffer's serialisation away.
                let horizon = p.busy_until.saturating_sub(self.last_advance);
                if p.peak_bytes(false) > self.cfg.buffer
                    || horizon > p.ser(self.cfg.buffer, || self.graph.ports[i].rate)
                {
                    return Err(format!(
                        "net: port {i} peaked at {} B, and holds {} ps of backlog, with a {} B buffer",
                        p.peak_bytes(false), horizon, self.cfg.buffer
                    ));
                }
            }
        }
        if self.lossless() && self.n.drops > self.n.lost {
            return Err(format!(
                "net: a lossless network dropped {} packets",
                self.n.drops
            ));
        }
        let port_free = self
            .q
            .qports
            .iter()
            .zip(&self.q.qload)
            .filter(|(q, &w)| q.busy && w & LZ_FLAG == 0)
            .count() as u64;
        if self.q.pool.live() as u64 != queued
            || self.events.len() as u64 != self.packet_events + port_free + self.q.credit_events
        {
            return Err(format!(
                "net: {} packets queued ({queued} in port lists), {} events for {} packets in flight and {port_free} busy ports",
                self.q.pool.live(),
                self.events.len(),
                self.packet_events
            ));
        }
        self.pf_check()?;
        self.h.check()
    }

    /// Completed flows still held, by id: (source, destination, bytes,
    /// FCT). With [`Network::retire_finished_flows`], the retired ones (all
    /// of lower id) are those [`Network::take_retired`] handed out.
    pub fn completed_flows(&self) -> impl Iterator<Item = (u32, u32, u64, SimTime)> + '_ {
        self.h.completed()
    }

    pub fn active_flows(&self) -> u64 {
        self.h.active
    }

    /// Paced transport: a flow whose last packet has been delivered leaves
    /// the flow table once every older flow has too (its memory is reused;
    /// the run's per-flow results are the recorder's). Safe because a paced
    /// flow sends each packet once and has no ACKs or timers: when its
    /// receiver holds all `npkts` packets, none is left in the network.
    /// With `log`, the retired flows are kept for [`Network::take_retired`].
    /// Not with [`Network::extend_flow`] (a finished flow can grow).
    pub fn retire_finished_flows(&mut self, log: bool) {
        assert!(
            matches!(self.cfg.transport, Transport::Paced),
            "net: only paced flows are retired"
        );
        self.h.set_retire(log);
    }

    /// Flows held in the flow table (all flows, without retirement).
    pub fn held_flows(&self) -> usize {
        self.h.flows.len() - self.h.flows.first_live()
    }

    /// Whether [`Network::take_retired`] has flows to hand out.
    #[inline]
    pub fn has_retired(&self) -> bool {
        self.h.has_retired()
    }

    /// Hands out the flows retired since the last call (source,
    /// destination, bytes, FCT), in id order.
    #[inline]
    pub fn take_retired(&mut self, f: impl FnMut(u32, u32, u64, SimTime)) {
        self.h.take_retired(f);
    }
}
