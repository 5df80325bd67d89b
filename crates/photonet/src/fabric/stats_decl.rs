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

const fn s(name: &'static str, unit: &'static str, doc: &'static str) -> StatDecl {
    StatDecl {
        name,
        unit,
        doc,
        when: When::Always,
    }
}

const fn only(name: &'static str, unit: &'static str, doc: &'static str, when: When) -> StatDecl {
    StatDecl {
        name,
        unit,
        doc,
        when,
    }
}

/// The max-min fluid models' (ESN and ESN-OSUB) statistics.
const FLUID: &[StatDecl] = &[
    s(
        "peak_active_flows",
        "count",
        "the most flows in the fabric at once",
    ),
    s(
        "rate_solves",
        "count",
        "max-min re-solves (at arrivals and departures)",
    ),
    s(
        "mean_flows_resolved",
        "ratio",
        "flows whose rate a re-solve recomputed, per re-solve",
    ),
    s(
        "mean_solve_rounds",
        "ratio",
        "water-filling rounds per re-solve",
    ),
    s(
        "mean_rate_changes",
        "ratio",
        "flows whose rate changed, per re-solve",
    ),
];

const IDEAL: &[StatDecl] = &[
    s("packets_sent", "count", "packets the NICs sent"),
    s(
        "peak_active_flows",
        "count",
        "the most flows in the fabric at once",
    ),
];

const SIRIUS: &[StatDecl] = &[
    s("uplinks", "count", "uplinks per node (U)"),
    s("ports", "count", "ports per AWGR (G): slots per epoch"),
    s(
        "dark_nodes",
        "count",
        "AWGR ports without a node (U·G − nodes)",
    ),
    s("cell_bytes", "bytes", "payload bytes of one cell"),
    s("slot_ns", "ns", "the slot: a cell plus the guardband"),
    s("epoch_ns", "ns", "the epoch: G slots"),
    s("slots_simulated", "count", "slots the run stepped through"),
    s(
        "cells_pushed",
        "count",
        "cells the nodes cut from arriving flows",
    ),
    s(
        "cells_sent",
        "count",
        "cells sent on an uplink (either hop)",
    ),
    s(
        "cells_forwarded",
        "count",
        "cells an intermediate node sent on (second hop)",
    ),
    s(
        "cells_delivered",
        "count",
        "cells delivered to their destination",
    ),
    s(
        "cells_out_of_order",
        "count",
        "cells that arrived before an earlier cell of their flow",
    ),
    s(
        "peak_reorder_bytes",
        "bytes",
        "the most bytes any destination held for reordering",
    ),
    s(
        "peak_node_queue_bytes",
        "bytes",
        "the most bytes any node queued to send",
    ),
    s(
        "peak_dest_queue_cells",
        "count",
        "the most cells any node queued for one destination",
    ),
    s(
        "peak_local_bytes",
        "bytes",
        "the most intra-rack bytes any node held",
    ),
    s(
        "peak_downlink_queue_bytes",
        "bytes",
        "the most bytes any node's downlink queue held",
    ),
    s(
        "cells_in_local",
        "count",
        "cells still in intra-rack delivery at the end",
    ),
    s(
        "cells_queued",
        "count",
        "cells still queued at a node at the end",
    ),
    s("cells_in_flight", "count", "cells on a link at the end"),
    s(
        "cells_at_downlinks",
        "count",
        "cells waiting at a downlink at the end",
    ),
    s(
        "cells_stuck_at_failed_nodes",
        "count",
        "cells held by a failed intermediate node at the end",
    ),
    s(
        "cells_stuck_for_failed_destinations",
        "count",
        "cells held for a failed destination at the end",
    ),
    s(
        "cells_given_up_for_failed_destinations",
        "count",
        "cells dropped because their destination failed",
    ),
    s("failed_nodes", "count", "nodes failed in the run"),
    s(
        "cells_for_failed_destinations",
        "count",
        "cells cut for a failed destination",
    ),
    s(
        "cells_retransmitted",
        "count",
        "cells sent again after a failure lost them",
    ),
    only(
        "requests",
        "count",
        "requests sent (request/grant congestion control)",
        When::Variants(&["sirius"]),
    ),
    only(
        "grants",
        "count",
        "grants sent (request/grant congestion control)",
        When::Variants(&["sirius"]),
    ),
    only(
        "contention_violations",
        "count",
        "slots in which two cells met at one AWGR output (must be 0)",
        When::Checked,
    ),
];

const NEGOTIATOR: &[StatDecl] = &[
    s("tors", "count", "ToRs (N)"),
    s("ports", "count", "ports per ToR (S)"),
    s(
        "speedup",
        "ratio",
        "port capacity over host capacity per ToR",
    ),
    s(
        "epoch_ns",
        "ns",
        "the epoch: predefined plus scheduled phase",
    ),
    s(
        "predefined_slots",
        "count",
        "slots of the predefined phase per epoch",
    ),
    s(
        "scheduled_slots",
        "count",
        "slots of the scheduled phase per epoch",
    ),
    s(
        "piggyback_payload_bytes",
        "bytes",
        "data bytes piggybacked in a predefined slot",
    ),
    s(
        "scheduled_payload_bytes",
        "bytes",
        "data bytes of a scheduled slot",
    ),
    s(
        "pipeline_step_epochs",
        "count",
        "epochs between a request and the slots it wins",
    ),
    s("slots_simulated", "count", "slots the run stepped through"),
    s(
        "epochs_simulated",
        "count",
        "epochs the run stepped through",
    ),
    s("requests", "count", "ToR-level requests sent"),
    s("grants", "count", "port-level grants sent"),
    s("accepts", "count", "grants accepted"),
    s("match_ratio", "ratio", "accepts over grants"),
    s(
        "match_ratio_epoch_p5",
        "ratio",
        "5th percentile of the per-epoch match ratio",
    ),
    s(
        "match_ratio_epoch_p50",
        "ratio",
        "median of the per-epoch match ratio",
    ),
    s(
        "match_ratio_epoch_p95",
        "ratio",
        "95th percentile of the per-epoch match ratio",
    ),
    s(
        "ports_withheld_by_receiver_limit",
        "count",
        "ports a receiver withheld from granting (receiver limit)",
    ),
    s(
        "piggyback_bytes",
        "bytes",
        "data bytes sent piggybacked in predefined slots",
    ),
    s(
        "scheduled_bytes",
        "bytes",
        "data bytes sent in scheduled slots",
    ),
    s(
        "scheduled_port_slot_use",
        "ratio",
        "matched port-slots that carried data",
    ),
    s(
        "peak_tor_queue_bytes",
        "bytes",
        "the most bytes any ToR queued",
    ),
    s(
        "mean_tor_queue_bytes",
        "bytes",
        "the ToR queue averaged over ToRs and epochs",
    ),
    s(
        "peak_host_queue_bytes",
        "bytes",
        "the most bytes any ToR's queue to its hosts held",
    ),
    s("requests_lost", "count", "requests lost on failed links"),
    s("grants_lost", "count", "grants lost on failed links"),
    s("packets_lost", "count", "data packets lost on failed links"),
    s(
        "bytes_retransmitted",
        "bytes",
        "data bytes sent again after a failed link lost them",
    ),
    s(
        "contention_violations",
        "count",
        "port-slots with two senders (must be 0)",
    ),
    s(
        "relay_requests",
        "count",
        "relay requests (selective relay)",
    ),
    s(
        "relay_refused_by_intermediate",
        "count",
        "relay requests an intermediate ToR refused",
    ),
    s("relay_accepts", "count", "relays accepted"),
    s("relayed_bytes", "bytes", "data bytes sent through a relay"),
    only(
        "relayed_bytes_via_<m>",
        "bytes",
        "data bytes sent to relay through ToR m (with relay on)",
        When::Sometimes,
    ),
    s(
        "failure_window_goodput_ratio",
        "ratio",
        "goodput during a link failure over goodput before it",
    ),
    s(
        "tor_fct_mice_p99_us",
        "us",
        "p99 ToR-to-ToR FCT of mice flows",
    ),
    s(
        "tor_fct_mice_mean_us",
        "us",
        "mean ToR-to-ToR FCT of mice flows",
    ),
    s("tor_fct_mice_count", "count", "mice flows counted"),
    s(
        "tor_fct_mice_unfinished",
        "count",
        "mice flows unfinished at the end",
    ),
];

/// The packet network's statistics (`net/`), shared by the fat-tree and the
/// HPC baselines.
const NET: &[StatDecl] = &[
    s("data_packets_sent", "count", "data packets the hosts sent"),
    s(
        "data_packets_delivered",
        "count",
        "data packets delivered to their destination",
    ),
    s("acks", "count", "acknowledgements sent"),
    s("packet_hops", "count", "link traversals of all packets"),
    s("drops", "count", "packets dropped at a full buffer"),
    s(
        "random_losses",
        "count",
        "packets lost at random (configured loss)",
    ),
    s("random_data_losses", "count", "data packets lost at random"),
    s("retransmissions", "count", "data packets sent again"),
    s(
        "fast_retransmits",
        "count",
        "retransmissions on duplicate ACKs",
    ),
    s("timeouts", "count", "retransmission timeouts"),
    s(
        "spurious_timeouts",
        "count",
        "timeouts of a flow none of whose packets was lost",
    ),
    s(
        "nic_wait_mean_us",
        "us",
        "mean wait of a data packet at its sending NIC",
    ),
    s(
        "nic_wait_max_us",
        "us",
        "longest wait of a data packet at its sending NIC",
    ),
    s("duplicate_packets", "count", "data packets received twice"),
    s(
        "reordered_packets",
        "count",
        "data packets received ahead of a missing one",
    ),
    s(
        "peak_packets_in_flight",
        "count",
        "the most packets in the network at once",
    ),
    s(
        "ecn_marks",
        "count",
        "packets marked congestion-experienced",
    ),
    s(
        "peak_queue_bytes",
        "bytes",
        "the most bytes any port buffered",
    ),
    s(
        "peak_queue_bytes.<tier>",
        "bytes",
        "the most bytes any port of a tier buffered",
    ),
    s("drops.<tier>", "count", "drops at a tier's ports"),
    s("ecn_marks.<tier>", "count", "ECN marks at a tier's ports"),
    only(
        "pfc_pauses",
        "count",
        "PFC pause frames sent (with PFC)",
        When::Sometimes,
    ),
    only(
        "pfc_pause_time_us",
        "us",
        "time ports spent paused (with PFC)",
        When::Sometimes,
    ),
    only(
        "pfc_pause_time_us.<tier>",
        "us",
        "time a tier's ports spent paused (with PFC)",
        When::Sometimes,
    ),
    only(
        "credit_stalls",
        "count",
        "sends held for want of credit (credit flow control)",
        When::Sometimes,
    ),
    only(
        "peak_vc_buffer_bytes",
        "bytes",
        "the most bytes any (link, VC) input buffer held (credit flow control)",
        When::Sometimes,
    ),
];

const FAT_TREE: &[StatDecl] = &{
    let net = NET;
    let extra = [
        only(
            "slowdown_mean.<class>",
            "ratio",
            "mean FCT over the ideal FCT, by size class (<10KB, <100KB, >=100KB, all) with completed flows",
            When::Sometimes,
        ),
        only(
            "slowdown_p99.<class>",
            "ratio",
            "p99 of FCT over the ideal FCT, by size class with completed flows",
            When::Sometimes,
        ),
        only(
            "slowdown_p50.<class>",
            "ratio",
            "median of FCT over the ideal FCT, by size class (transport = \"pfabric\")",
            When::Sometimes,
        ),
        only(
            "ndp_trimmed",
            "count",
            "data packets trimmed to their header (transport = \"ndp\")",
            When::Sometimes,
        ),
        only(
            "ndp_trimmed_queued",
            "count",
            "trims that cut the newest queued packet instead of the arrival (NDP)",
            When::Sometimes,
        ),
        only(
            "ndp_header_drops",
            "count",
            "headers dropped because the header queue was full (NDP)",
            When::Sometimes,
        ),
        only("ndp_nacks", "count", "NACKs the receivers sent (NDP)", When::Sometimes),
        only("ndp_pulls", "count", "PULLs the receivers sent (NDP)", When::Sometimes),
        only(
            "duplicates",
            "count",
            "data packets received twice (NDP)",
            When::Sometimes,
        ),
        only(
            "peak_data_queue_bytes",
            "bytes",
            "largest data queue at any switch port (NDP)",
            When::Sometimes,
        ),
    ];
    let mut out = [s("", "", ""); NET.len() + 10];
    let mut i = 0;
    while i < net.len() {
        out[i] = net[i];
        i += 1;
    }
    let mut j = 0;
    while j < extra.len() {
        out[i + j] = extra[j];
        j += 1;
    }
    out
};

const BALDUR: &[StatDecl] = &[
    s("multiplicity", "count", "path multiplicity m"),
    s("stages", "count", "switch stages (log2 N)"),
    s("packets_sent", "count", "distinct data packets sent"),
    s(
        "data_transmissions",
        "count",
        "data packets injected, retransmissions included",
    ),
    s("retransmissions", "count", "data packets sent again"),
    s("timeouts", "count", "retransmission timeouts"),
    s(
        "data_dropped",
        "count",
        "data packets dropped in the network",
    ),
    s("acks_sent", "count", "ACKs injected"),
    s("acks_dropped", "count", "ACKs dropped in the network"),
    s(
        "duplicates_received",
        "count",
        "data packets received twice",
    ),
    s(
        "drop_rate",
        "ratio",
        "packets dropped over packets injected",
    ),
    s(
        "data_drop_rate",
        "ratio",
        "data packets dropped over data packets injected",
    ),
    s("ack_drop_rate", "ratio", "ACKs dropped over ACKs injected"),
    s(
        "retx_buffer_peak_bytes",
        "bytes",
        "the most bytes any node's retransmission buffer held",
    ),
    s(
        "retx_buffer_peak_mean_bytes",
        "bytes",
        "nodes' peak retransmission-buffer bytes, averaged",
    ),
    s(
        "outstanding_slots_high_water",
        "count",
        "the most unacknowledged packets held at once",
    ),
    s("drops_stage_<s>", "count", "packets dropped at stage s"),
];

const MORDIA: &[StatDecl] = &[
    s("days", "count", "circuit days run"),
    s("packets", "count", "packets sent"),
    s(
        "held_packets",
        "count",
        "packets held at a ToR for want of a circuit",
    ),
    s(
        "packet_switch_bytes",
        "bytes",
        "bytes sent over the packet switch",
    ),
    s(
        "packet_switch_share",
        "ratio",
        "bytes over the packet switch over all bytes sent",
    ),
    s("lost_packets", "count", "packets lost in reconfiguration"),
    s(
        "lost_bytes_on_wire",
        "bytes",
        "bytes on the wire when a circuit went down",
    ),
    s("circuit_bytes", "bytes", "bytes sent over circuits"),
    s(
        "duty_cycle",
        "ratio",
        "time circuits were up over up plus reconfiguring",
    ),
    s("peak_voq_bytes", "bytes", "the most bytes any VOQ held"),
    s(
        "packets_in_night",
        "count",
        "packets sent while circuits reconfigured (must be 0)",
    ),
    only(
        "weeks_scheduled",
        "count",
        "weeks TMS scheduled",
        When::Variants(&["mordia"]),
    ),
    only(
        "days_dropped",
        "count",
        "days TMS truncated (longest-time-slot-first)",
        When::Variants(&["mordia"]),
    ),
    only(
        "fallback_weeks",
        "count",
        "weeks scheduled by the fallback",
        When::Variants(&["mordia"]),
    ),
    only(
        "probe_voq_bytes",
        "bytes",
        "VOQ bytes at the probed day (round robin always; TMS when a probe is configured)",
        When::Sometimes,
    ),
    only(
        "probe_voq_units",
        "count",
        "probe_voq_bytes in slots of one host at R",
        When::Sometimes,
    ),
];

const REACTOR: &[StatDecl] = &[
    s("periods", "count", "accumulation periods run"),
    s("configurations", "count", "circuit configurations run"),
    s(
        "configurations_per_period",
        "ratio",
        "circuit configurations per period",
    ),
    s("circuit_bytes", "bytes", "bytes sent over circuits"),
    s(
        "circuit_utilisation",
        "ratio",
        "circuit bytes over circuit capacity while circuits were up",
    ),
    s(
        "circuit_in_night",
        "bytes",
        "bytes a circuit carried while reconfiguring (must be 0)",
    ),
    s("ticks", "count", "scheduler ticks run"),
    only(
        "eps_bytes",
        "bytes",
        "bytes delivered over the EPS",
        When::Variants(&["reactor"]),
    ),
    only(
        "pfc_pauses",
        "count",
        "PFC pause frames the EPS sent",
        When::Variants(&["reactor"]),
    ),
    only(
        "eps_overflows",
        "count",
        "packets the EPS dropped (must be 0)",
        When::Variants(&["reactor"]),
    ),
    only(
        "peak_eps_ingress_bytes",
        "bytes",
        "the most bytes any EPS ingress buffered",
        When::Variants(&["reactor"]),
    ),
    only(
        "eps_data_packets_delivered",
        "count",
        "data packets delivered over the EPS",
        When::Variants(&["reactor"]),
    ),
    only(
        "eps_pfc_pause_time_us",
        "us",
        "time EPS ports spent paused",
        When::Variants(&["reactor"]),
    ),
    only(
        "eps_peak_queue_bytes.eps_port",
        "bytes",
        "the most bytes any EPS port buffered",
        When::Variants(&["reactor"]),
    ),
    only(
        "eps_peak_queue_bytes.downlink",
        "bytes",
        "the most bytes any EPS downlink buffered",
        When::Variants(&["reactor"]),
    ),
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
