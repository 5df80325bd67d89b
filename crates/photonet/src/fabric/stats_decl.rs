//! Declared statistics: every name a fabric may put in a run's
//! `fabric_stats`, with its unit and what it means. Kept here, keyed by the
//! fabric's parameter table, so fabric modules need not change (as
//! [`LOOKS`](super::registry::LOOKS) is). The conformance suite checks that a
//! run of every registered variant emits exactly the names declared for it;
//! experiment files are checked against them before anything runs; the docs
//! list them.

/// When a declared statistic is in a run's `fabric_stats`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum When {
    /// Every run of the table's variants.
    Always,
    /// Every run of these variants (by `fabric = "…"` name), and no other.
    Variants(&'static [&'static str]),
    /// Runs with `metrics.check_invariants` only.
    Checked,
    /// Only when the configuration or the run has it (the doc says when).
    Sometimes,
}

/// One statistic. A `<…>` in the name stands for a part named by the run
/// (a tier of ports, a stage, a size class): `drops.<tier>` is `drops.tor`,
/// `drops.core`, ….
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StatDecl {
    pub name: &'static str,
    /// `count`, `bytes`, `us`, `ns`, `ratio` (a fraction or a mean of counts).
    pub unit: &'static str,
    pub doc: &'static str,
    pub when: When,
}

impl StatDecl {
    /// Whether `name` is this statistic (for a `<…>` name: the same text
    /// around a non-empty part).
    pub fn matches(&self, name: &str) -> bool {
        match self.name.find('<') {
            None => self.name == name,
            Some(i) => {
                let rest = &self.name[i..];
                let tail = rest.find('>').map_or("", |j| &rest[j + 1..]);
                let (head, n) = (&self.name[..i], name.len());
                n > head.len() + tail.len() && name.starts_with(head) && name.ends_with(tail)
            }
        }
    }

    /// Whether a run of `variant` (with invariant checks if `checked`) may
    /// emit it.
    pub fn may_appear(&self, variant: &str, checked: bool) -> bool {
        match self.when {
            When::Variants(vs) => vs.contains(&variant),
            When::Checked => checked,
            When::Always | When::Sometimes => true,
        }
    }

    /// Whether every such run emits it.
    pub fn required(&self, variant: &str, checked: bool) -> bool {
        self.when != When::Sometimes && self.may_appear(variant, checked)
    }
}

/// A table of statistics: groups `When::… => { … }` of entries, one a line:
/// `"name" unit "doc";`.
macro_rules! stats {
    ($($when:expr => { $($name:literal $unit:ident $doc:literal;)* })*) => {
        &[$($(StatDecl {
            name: $name,
            unit: stringify!($unit),
            doc: $doc,
            when: $when,
        },)*)*]
    };
}

/// The max-min fluid models' (ESN and ESN-OSUB) statistics.
const FLUID: &[StatDecl] = stats![
    When::Always => {
        "peak_active_flows" count "the most flows in the fabric at once";
        "rate_solves" count "max-min re-solves (at arrivals and departures)";
        "mean_flows_resolved" ratio "flows whose rate a re-solve recomputed, per re-solve";
        "mean_solve_rounds" ratio "water-filling rounds per re-solve";
        "mean_rate_changes" ratio "flows whose rate changed, per re-solve";
    }
];

const IDEAL: &[StatDecl] = stats![
    When::Always => {
        "packets_sent" count "packets the NICs sent";
        "peak_active_flows" count "the most flows in the fabric at once";
    }
];

const SIRIUS: &[StatDecl] = stats![
    When::Always => {
        "uplinks" count "uplinks per node (U)";
        "ports" count "ports per AWGR (G): slots per epoch";
        "dark_nodes" count "AWGR ports without a node (U·G − nodes)";
        "cell_bytes" bytes "payload bytes of one cell";
        "slot_ns" ns "the slot: a cell plus the guardband";
        "epoch_ns" ns "the epoch: G slots";
        "slots_simulated" count "slots the run stepped through";
        "cells_pushed" count "cells the nodes cut from arriving flows";
        "cells_sent" count "cells sent on an uplink (either hop)";
        "cells_forwarded" count "cells an intermediate node sent on (second hop)";
        "cells_delivered" count "cells delivered to their destination";
        "cells_out_of_order" count "cells that arrived before an earlier cell of their flow";
        "peak_reorder_bytes" bytes "the most bytes any destination held for reordering";
        "peak_server_reorder_bytes" bytes
            "the most bytes any server held for reordering, summed over its flows";
        "peak_node_queue_bytes" bytes "the most bytes any node queued to send";
        "peak_second_hop_queue_bytes" bytes
            "the most bytes any node queued for the second hop (the queues Q bounds)";
        "peak_first_hop_queue_bytes" bytes
            "the most granted first-hop bytes any node queued to send";
        "peak_dest_queue_cells" count "the most cells any node queued for one destination";
        "peak_local_bytes" bytes "the most intra-rack bytes any node held";
        "peak_downlink_queue_bytes" bytes "the most bytes any node's downlink queue held";
        "cells_in_local" count "cells still in intra-rack delivery at the end";
        "cells_queued" count "cells still queued at a node at the end";
        "cells_in_flight" count "cells on a link at the end";
        "cells_at_downlinks" count "cells waiting at a downlink at the end";
        "cells_stuck_at_failed_nodes" count "cells held by a failed intermediate node at the end";
        "cells_stuck_for_failed_destinations" count
            "cells held for a failed destination at the end";
        "cells_given_up_for_failed_destinations" count
            "cells dropped because their destination failed";
        "failed_nodes" count "nodes failed in the run";
        "cells_for_failed_destinations" count "cells cut for a failed destination";
        "cells_retransmitted" count "cells sent again after a failure lost them";
    }
    When::Variants(&["sirius"]) => {
        "requests" count "requests sent (request/grant congestion control)";
        "grants" count "grants sent (request/grant congestion control)";
    }
    When::Checked => {
        "contention_violations" count "slots in which two cells met at one AWGR output (must be 0)";
    }
];

const NEGOTIATOR: &[StatDecl] = stats![
    When::Always => {
        "tors" count "ToRs (N)";
        "ports" count "ports per ToR (S)";
        "speedup" ratio "port capacity over host capacity per ToR";
        "epoch_ns" ns "the epoch: predefined plus scheduled phase";
        "predefined_slots" count "slots of the predefined phase per epoch";
        "scheduled_slots" count "slots of the scheduled phase per epoch";
        "piggyback_payload_bytes" bytes "data bytes piggybacked in a predefined slot";
        "scheduled_payload_bytes" bytes "data bytes of a scheduled slot";
        "pipeline_step_epochs" count "epochs between a request and the slots it wins";
        "slots_simulated" count "slots the run stepped through";
        "epochs_simulated" count "epochs the run stepped through";
        "requests" count "ToR-level requests sent";
        "grants" count "port-level grants sent";
        "accepts" count "grants accepted";
        "match_ratio" ratio "accepts over grants";
        "match_ratio_epoch_p5" ratio "5th percentile of the per-epoch match ratio";
        "match_ratio_epoch_p50" ratio "median of the per-epoch match ratio";
        "match_ratio_epoch_p95" ratio "95th percentile of the per-epoch match ratio";
        "ports_withheld_by_receiver_limit" count
            "ports a receiver withheld from granting (receiver limit)";
        "piggyback_bytes" bytes "data bytes sent piggybacked in predefined slots";
        "scheduled_bytes" bytes "data bytes sent in scheduled slots";
        "scheduled_port_slot_use" ratio "matched port-slots that carried data";
        "peak_tor_queue_bytes" bytes "the most bytes any ToR queued";
        "mean_tor_queue_bytes" bytes "the ToR queue averaged over ToRs and epochs";
        "peak_host_queue_bytes" bytes "the most bytes any ToR's queue to its hosts held";
        "requests_lost" count "requests lost on failed links";
        "grants_lost" count "grants lost on failed links";
        "packets_lost" count "data packets lost on failed links";
        "bytes_retransmitted" bytes "data bytes sent again after a failed link lost them";
        "contention_violations" count "port-slots with two senders (must be 0)";
        "relay_requests" count "relay requests (selective relay)";
        "relay_refused_by_intermediate" count "relay requests an intermediate ToR refused";
        "relay_accepts" count "relays accepted";
        "relayed_bytes" bytes "data bytes sent through a relay";
    }
    When::Sometimes => {
        "relayed_bytes_via_<m>" bytes "data bytes sent to relay through ToR m (with relay on)";
    }
    When::Always => {
        "failure_window_goodput_ratio" ratio "goodput during a link failure over goodput before it";
        "tor_fct_mice_p99_us" us "p99 ToR-to-ToR FCT of mice flows";
        "tor_fct_mice_mean_us" us "mean ToR-to-ToR FCT of mice flows";
        "tor_fct_mice_count" count "mice flows counted";
        "tor_fct_mice_unfinished" count "mice flows unfinished at the end";
    }
];

/// The packet network's statistics (`net/`), shared by the fat-tree and the
/// HPC baselines.
const NET: &[StatDecl] = stats![
    When::Always => {
        "data_packets_sent" count "data packets the hosts sent";
        "data_packets_delivered" count "data packets delivered to their destination";
        "acks" count "acknowledgements sent";
        "packet_hops" count "link traversals of all packets";
        "drops" count "packets dropped at a full buffer";
        "random_losses" count "packets lost at random (configured loss)";
        "random_data_losses" count "data packets lost at random";
        "retransmissions" count "data packets sent again";
        "fast_retransmits" count "retransmissions on duplicate ACKs";
        "timeouts" count "retransmission timeouts";
        "spurious_timeouts" count "timeouts of a flow none of whose packets was lost";
        "nic_wait_mean_us" us "mean wait of a data packet at its sending NIC";
        "nic_wait_max_us" us "longest wait of a data packet at its sending NIC";
        "duplicate_packets" count "data packets received twice";
        "reordered_packets" count "data packets received ahead of a missing one";
        "peak_packets_in_flight" count "the most packets in the network at once";
        "ecn_marks" count "packets marked congestion-experienced";
        "peak_queue_bytes" bytes "the most bytes any port buffered";
        "peak_queue_bytes.<tier>" bytes "the most bytes any port of a tier buffered";
        "drops.<tier>" count "drops at a tier's ports";
        "ecn_marks.<tier>" count "ECN marks at a tier's ports";
    }
    When::Sometimes => {
        "pfc_pauses" count "PFC pause frames sent (with PFC)";
        "pfc_pause_time_us" us "time ports spent paused (with PFC)";
        "pfc_pause_time_us.<tier>" us "time a tier's ports spent paused (with PFC)";
        "credit_stalls" count "sends held for want of credit (credit flow control)";
        "peak_vc_buffer_bytes" bytes
            "the most bytes any (link, VC) input buffer held (credit flow control)";
    }
];

/// The fat-tree's statistics beyond [`NET`]'s.
const FAT_TREE_OWN: &[StatDecl] = stats![
    When::Sometimes => {
        "slowdown_mean.<class>" ratio
            "mean FCT over the ideal FCT, by size class (<10KB, <100KB, >=100KB, all) with completed flows";
        "slowdown_p99.<class>" ratio
            "p99 of FCT over the ideal FCT, by size class with completed flows";
        "slowdown_p50.<class>" ratio
            "median of FCT over the ideal FCT, by size class (transport = \"pfabric\")";
        "ndp_trimmed" count "data packets trimmed to their header (transport = \"ndp\")";
        "ndp_trimmed_queued" count
            "trims that cut the newest queued packet instead of the arrival (NDP)";
        "ndp_header_drops" count "headers dropped because the header queue was full (NDP)";
        "ndp_nacks" count "NACKs the receivers sent (NDP)";
        "ndp_pulls" count "PULLs the receivers sent (NDP)";
        "duplicates" count "data packets received twice (NDP)";
        "peak_data_queue_bytes" bytes "largest data queue at any switch port (NDP)";
    }
];

const FAT_TREE: &[StatDecl] = &concat::<{ NET.len() + FAT_TREE_OWN.len() }>(NET, FAT_TREE_OWN);

/// `a` then `b`, in a constant (`N` = their total length).
const fn concat<const N: usize>(a: &[StatDecl], b: &[StatDecl]) -> [StatDecl; N] {
    let mut out = [a[0]; N];
    let mut i = 0;
    while i < N {
        out[i] = if i < a.len() { a[i] } else { b[i - a.len()] };
        i += 1;
    }
    out
}

const BALDUR: &[StatDecl] = stats![
    When::Always => {
        "multiplicity" count "path multiplicity m";
        "stages" count "switch stages (log2 N)";
        "packets_sent" count "distinct data packets sent";
        "data_transmissions" count "data packets injected, retransmissions included";
        "retransmissions" count "data packets sent again";
        "timeouts" count "retransmission timeouts";
        "data_dropped" count "data packets dropped in the network";
        "acks_sent" count "ACKs injected";
        "acks_dropped" count "ACKs dropped in the network";
        "duplicates_received" count "data packets received twice";
        "drop_rate" ratio "packets dropped over packets injected";
        "data_drop_rate" ratio "data packets dropped over data packets injected";
        "ack_drop_rate" ratio "ACKs dropped over ACKs injected";
        "retx_buffer_peak_bytes" bytes "the most bytes any node's retransmission buffer held";
        "retx_buffer_peak_mean_bytes" bytes "nodes' peak retransmission-buffer bytes, averaged";
        "backlog_peak_bytes" bytes "the most bytes any node held waiting to be sent or un-ACKed";
        "outstanding_slots_high_water" count "the most unacknowledged packets held at once";
        "drops_stage_<s>" count "packets dropped at stage s";
    }
];

const MORDIA: &[StatDecl] = stats![
    When::Always => {
        "days" count "circuit days run";
        "packets" count "packets sent";
        "held_packets" count "packets held at a ToR for want of a circuit";
        "packet_switch_bytes" bytes "bytes sent over the packet switch";
        "packet_switch_share" ratio "bytes over the packet switch over all bytes sent";
        "lost_packets" count "packets lost in reconfiguration";
        "lost_bytes_on_wire" bytes "bytes on the wire when a circuit went down";
        "circuit_bytes" bytes "bytes sent over circuits";
        "duty_cycle" ratio "time circuits were up over up plus reconfiguring";
        "peak_voq_bytes" bytes "the most bytes any VOQ held";
        "packets_in_night" count "packets sent while circuits reconfigured (must be 0)";
    }
    When::Variants(&["mordia"]) => {
        "weeks_scheduled" count "weeks TMS scheduled";
        "days_dropped" count "days TMS truncated (longest-time-slot-first)";
        "fallback_weeks" count "weeks scheduled by the fallback";
    }
    When::Sometimes => {
        "probe_voq_bytes" bytes
            "VOQ bytes at the probed day (round robin always; TMS when a probe is configured)";
        "probe_voq_units" count "probe_voq_bytes in slots of one host at R";
    }
];

const REACTOR: &[StatDecl] = stats![
    When::Always => {
        "periods" count "accumulation periods run";
        "configurations" count "circuit configurations run";
        "configurations_per_period" ratio "circuit configurations per period";
        "circuit_bytes" bytes "bytes sent over circuits";
        "circuit_utilisation" ratio "circuit bytes over circuit capacity while circuits were up";
        "circuit_in_night" bytes "bytes a circuit carried while reconfiguring (must be 0)";
        "ticks" count "scheduler ticks run";
    }
    When::Variants(&["reactor"]) => {
        "eps_bytes" bytes "bytes delivered over the EPS";
        "pfc_pauses" count "PFC pause frames the EPS sent";
        "eps_overflows" count "packets the EPS dropped (must be 0)";
        "peak_eps_ingress_bytes" bytes "the most bytes any EPS ingress buffered";
        "eps_data_packets_delivered" count "data packets delivered over the EPS";
        "eps_pfc_pause_time_us" us "time EPS ports spent paused";
        "eps_peak_queue_bytes.eps_port" bytes "the most bytes any EPS port buffered";
        "eps_peak_queue_bytes.downlink" bytes "the most bytes any EPS downlink buffered";
    }
    When::Always => {
    }
];

/// Every registered table's statistics.
pub const DECLARED: &[(&str, &[StatDecl])] = &[
    ("esn", FLUID),
    ("esn_osub", FLUID),
    ("ideal", IDEAL),
    ("sirius", SIRIUS),
    ("negotiator", NEGOTIATOR),
    ("fat_tree", FAT_TREE),
    ("hpc", NET),
    ("baldur", BALDUR),
    ("mordia", MORDIA),
    ("reactor", REACTOR),
];

/// The statistics declared for table `table` (empty if it declares none).
pub fn declared(table: &str) -> &'static [StatDecl] {
    DECLARED
        .iter()
        .find(|(t, _)| *t == table)
        .map_or(&[], |(_, d)| d)
}

/// What is wrong with the statistics `emitted` by a run of `variant` (table
/// `table`, invariant checks `checked`): names not declared for it, and
/// declared names it must emit but did not. Empty when they agree.
pub fn mismatches<'a>(
    table: &str,
    variant: &str,
    checked: bool,
    emitted: impl IntoIterator<Item = &'a str>,
) -> Vec<String> {
    let decl = declared(table);
    let emitted: Vec<&str> = emitted.into_iter().collect();
    let mut out = Vec::new();
    for name in &emitted {
        if !decl
            .iter()
            .any(|d| d.may_appear(variant, checked) && d.matches(name))
        {
            out.push(format!(
                "{variant}: emits {name:?}, which is not declared for it"
            ));
        }
    }
    for d in decl.iter().filter(|d| d.required(variant, checked)) {
        if !emitted.iter().any(|n| d.matches(n)) {
            out.push(format!(
                "{variant}: declares {:?} but did not emit it",
                d.name
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fabric::REGISTRY;

    fn s(name: &'static str, unit: &'static str, doc: &'static str) -> StatDecl {
        StatDecl {
            name,
            unit,
            doc,
            when: When::Always,
        }
    }

    #[test]
    fn every_table_declares_its_statistics_once_each() {
        for spec in REGISTRY {
            let d = declared(spec.table);
            assert!(!d.is_empty(), "{} declares no statistics", spec.table);
            for (i, a) in d.iter().enumerate() {
                assert!(
                    !a.name.is_empty() && !a.doc.is_empty() && !a.unit.is_empty(),
                    "{}: {a:?}",
                    spec.table
                );
                assert!(
                    ["count", "bytes", "us", "ns", "ratio"].contains(&a.unit),
                    "{}.{}: unit {:?}",
                    spec.table,
                    a.name,
                    a.unit
                );
                for b in &d[i + 1..] {
                    assert_ne!(a.name, b.name, "{} declares it twice", spec.table);
                }
                if let When::Variants(vs) = a.when {
                    for v in vs {
                        assert!(
                            spec.variants.iter().any(|x| x.name == *v),
                            "{}.{}: {v:?} is not a variant of the table",
                            spec.table,
                            a.name
                        );
                    }
                }
            }
        }
        for (t, _) in DECLARED {
            assert!(
                REGISTRY.iter().any(|s| s.table == *t),
                "{t} is not a registered table"
            );
        }
    }

    #[test]
    fn a_placeholder_stands_for_a_non_empty_part() {
        let d = s("drops.<tier>", "count", "x");
        assert!(d.matches("drops.tor"));
        assert!(!d.matches("drops."));
        assert!(!d.matches("drops"));
        assert!(!d.matches("ecn_marks.tor"));
        let st = s("drops_stage_<s>", "count", "x");
        assert!(st.matches("drops_stage_0") && !st.matches("drops_stage_"));
        assert!(s("drops", "count", "x").matches("drops"));
        assert!(!s("drops", "count", "x").matches("drops.tor"));
    }
}
