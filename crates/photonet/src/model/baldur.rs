//! Baldur's scale and power analysis (seed `baldur-all-optical.txt` §IV-E,
//! §VI-A): the one-shot worst-case injection that picks the multiplicity for
//! 1K…1M nodes, and the power per node of the resulting networks.
//!
//! # One-shot analysis (§IV-E)
//! "Given a network scale … we consider the worst-case scenario where one
//! packet per server node is injected to the network and all the packets
//! arrive at the first stage of the network at the same time". All packets
//! then reach every stage together, so a stage is resolved at once: at each
//! switch direction the first m packets (in node order) take its m outputs and
//! the rest are dropped. The wiring is the fabric's
//! ([`crate::topology::wire_stage`], the same draws in the same order),
//! generated one stage at a time so that 2^20 nodes need O(N·m) memory; the
//! result equals the `baldur` fabric's with the same wiring (tested). The
//! chosen multiplicity of a scale is the smallest m whose drop rate is below
//! `drop_threshold` for every pattern. Each (scale, m) is one random wiring
//! (one network) and `packets_per_point / N` (at least 1) traffic samples per
//! pattern.
//!
//! # Power (§VI-A)
//! Per node: the switches' TL gates ((N/2)·k switches, each Table V's gates
//! for its m, at `gate_power_mw`) divided by N, plus the node's transceivers
//! (1.5 W, SFP28) and SerDes (0.693 W), and one 1 MB retransmission buffer
//! (0.741 W). A node transmits on one link and receives on one
//! (`node_receivers = "one"`) or on the m outputs of its last-stage
//! direction (`"multiplicity"`, §IV-E: "2m output ports (m output ports per
//! each output direction)"); its optical interfaces, 1 + r, count as
//! max(1, r) transceivers (`transceiver_counting = "module"`: an SFP28
//! module has one transmitter and one receiver, so r receivers need r
//! modules) or (1 + r) / 2 (`"lane"`: a transmitter or a receiver is half a
//! module). `transceivers_per_node` and `serdes_per_node` multiply that
//! count (a SerDes per transceiver). The report's `readings` give the power
//! under each count. Switch power is scaled by each of
//! `switch_power_multipliers` for the sensitivity analysis (Fig. 9). The
//! electrical networks' power (ORION 3.0 / CACTI 6.5 in the paper) is not
//! modelled.
//!
//! # The AWGR comparison (§VII)
//! At `awgr_log2_nodes` (32 nodes), the one-shot search picks m as for every
//! scale, and the report gives the TL chips' power per node (switches only:
//! the paper excludes transceivers and SerDes, "the same for both networks").
//!
//! # Cost (§VI-B, Fig. 10)
//! The paper counts fibres, FAUs, RFECs, optical interposers and optical
//! transceivers and prices an interposer at 5x a CMOS chip of the same area,
//! but gives no unit prices: every price here is a stated assumption (the
//! parameters `*_usd`), and the result is a function of them. The component
//! counts follow §IV-G: one stage per interposer column; an interposer
//! (`interposer_mm` = 32 x 10 mm) takes fibres along its long edges at
//! `fiber_pitch_um` (127 µm), so an edge carries ⌊32 mm / 127 µm⌋ = 251
//! fibres and an interposer holds ⌊251 / 2m⌋ switches (2m inputs on one
//! edge, 2m outputs on the other); a stage needs ⌈(N/2) / that⌉
//! interposers. Each interposer edge of the k + 1 column boundaries (between
//! stages, and to the node fibres at both ends) has ⌈fibres / fau_channels⌉
//! FAUs; the nodes' 2N fibres end in RFECs of `rfec_ports` ports; each node
//! has `transceivers_per_node` transceivers. Cost per node is the total over
//! N, and `cost_multipliers` scales every price (the 0.5x/2x sensitivity).

use crate::error::{from_toml_text, ConfigError};
use crate::flow::HostId;
use crate::rng::RngStreams;
use crate::topology::wire_stage;
use crate::workload::{derangement, fixed_destinations, FixedMap};
use serde::{Deserialize, Serialize};
use serde_json::json;

/// Switch latency by multiplicity m = 1…5 (Table V), in picoseconds (the
/// `baldur` fabric's default `switch_latency`).
pub const TABLE_V_SWITCH_LATENCY_PS: [u64; 5] = [140, 490, 940, 1_500, 2_250];
/// TL gates per 2×2 switch by multiplicity m = 1…5 (Table V).
pub const TABLE_V_GATES: [u64; 5] = [64, 300, 642, 1_112, 1_710];

/// Parameters of the Baldur model (TOML; missing keys take the paper's values).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct BaldurModelParams {
    /// Smallest and largest scale, as log2 of the number of nodes (1K…1M).
    pub min_log2_nodes: u32,
    pub max_log2_nodes: u32,
    /// TL gates per 2×2 switch for m = 1, 2, … (Table V); the one-shot search
    /// tries every m listed.
    pub gates_per_switch: Vec<u64>,
    /// Power of one TL gate (Table IV: 0.406 mW).
    pub gate_power_mw: f64,
    pub transceiver_power_w: f64,
    /// Factor on the node's transceiver count (see `transceiver_counting`).
    pub transceivers_per_node: f64,
    pub serdes_power_w: f64,
    /// Factor on the node's SerDes count (one per transceiver).
    pub serdes_per_node: f64,
    /// Receivers per node: "one" or "multiplicity" (the m last-stage outputs
    /// of the node's direction).
    pub node_receivers: String,
    /// How a node's 1 transmitter and r receivers count as transceivers:
    /// "module" (max(1, r)) or "lane" ((1 + r) / 2).
    pub transceiver_counting: String,
    /// The AWGR comparison's scale (§VII: 32 nodes).
    pub awgr_log2_nodes: u32,
    /// A 1 MB retransmission buffer per node (0.741 W).
    pub retx_buffer_power_w: f64,
    /// The drop rate a multiplicity must stay under (§IV-E: 1 %).
    pub drop_threshold: f64,
    /// One-shot traffic: "random_permutation", "transpose", "bisection".
    pub patterns: Vec<String>,
    /// Packets per (scale, m, pattern): N·max(1, this / N).
    pub packets_per_point: u64,
    pub seed: u64,
    /// Switch-power factors of the sensitivity analysis (Fig. 9: 0.5, 2).
    pub switch_power_multipliers: Vec<f64>,
    /// Cost: interposer edges, mm (§IV-G: 32 x 10 mm); fibres enter and
    /// leave along the long edges.
    pub interposer_mm: [f64; 2],
    /// Cost: fibre pitch at an interposer edge, µm (§IV-G: 127).
    pub fiber_pitch_um: f64,
    /// Cost: CMOS die cost per mm², USD (ASSUMED: the paper gives none).
    pub cmos_usd_per_mm2: f64,
    /// Cost: interposer price / CMOS price of the same area (§VI-B: 5).
    pub interposer_cmos_multiplier: f64,
    /// Cost: channels of one fibre array unit (ASSUMED).
    pub fau_channels: u32,
    /// Cost: one FAU, USD (ASSUMED).
    pub fau_usd: f64,
    /// Cost: LC ports of one rack-mount fibre enclosure with cassettes (ASSUMED).
    pub rfec_ports: u32,
    /// Cost: one RFEC, USD (ASSUMED).
    pub rfec_usd: f64,
    /// Cost: fibres per node (one to the network, one back) and their price
    /// with LC connectors, USD each (ASSUMED).
    pub fibres_per_node: f64,
    pub fibre_usd: f64,
    /// Cost: one 25 Gbps optical transceiver, USD (ASSUMED).
    pub transceiver_usd: f64,
    /// Cost: factors applied to every price (the 0.5x / 2x sensitivity).
    pub cost_multipliers: Vec<f64>,
}

impl Default for BaldurModelParams {
    fn default() -> Self {
        BaldurModelParams {
            min_log2_nodes: 10,
            max_log2_nodes: 20,
            gates_per_switch: TABLE_V_GATES.to_vec(),
            gate_power_mw: 0.406,
            transceiver_power_w: 1.5,
            transceivers_per_node: 1.0,
            serdes_power_w: 0.693,
            serdes_per_node: 1.0,
            node_receivers: "one".into(),
            transceiver_counting: "module".into(),
            awgr_log2_nodes: 5,
            retx_buffer_power_w: 0.741,
            drop_threshold: 0.01,
            patterns: vec![
                "random_permutation".into(),
                "transpose".into(),
                "bisection".into(),
            ],
            packets_per_point: 1 << 20,
            seed: 1,
            switch_power_multipliers: vec![0.5, 1.0, 2.0],
            interposer_mm: [32.0, 10.0],
            fiber_pitch_um: 127.0,
            cmos_usd_per_mm2: 0.5,
            interposer_cmos_multiplier: 5.0,
            fau_channels: 64,
            fau_usd: 150.0,
            rfec_ports: 288,
            rfec_usd: 2_000.0,
            fibres_per_node: 2.0,
            fibre_usd: 10.0,
            transceiver_usd: 40.0,
            cost_multipliers: vec![0.5, 1.0, 2.0],
        }
    }
}

/// Component counts and cost of one Baldur network (see the module docs).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct CostRow {
    pub log2_nodes: u32,
    pub nodes: u64,
    pub multiplicity: u32,
    pub fibres_per_edge: u64,
    pub switches_per_interposer: u64,
    pub interposers: u64,
    pub faus: u64,
    pub rfecs: u64,
    pub interposer_usd_per_node: f64,
    pub fau_usd_per_node: f64,
    pub rfec_usd_per_node: f64,
    pub fibre_usd_per_node: f64,
    pub transceiver_usd_per_node: f64,
    pub usd_per_node: f64,
}

/// The cost of a 2^k-node Baldur of multiplicity m with every price times `x`.
pub fn cost(p: &BaldurModelParams, k: u32, m: u32, x: f64) -> Option<CostRow> {
    let n = 1u64 << k;
    let edge = p.interposer_mm[0].max(p.interposer_mm[1]);
    let fibres_per_edge = (edge * 1000.0 / p.fiber_pitch_um).floor() as u64;
    let per_interposer = fibres_per_edge / (2 * m as u64);
    if per_interposer == 0 {
        return None;
    }
    let per_stage = (n / 2).div_ceil(per_interposer);
    let interposers = per_stage * k as u64;
    // Fibres on one edge of one interposer: its switches' 2m ports.
    let edge_fibres = (n / 2).min(per_interposer) * 2 * m as u64;
    let faus = (k as u64 + 1) * per_stage * edge_fibres.div_ceil(p.fau_channels.max(1) as u64);
    let rfecs = ((p.fibres_per_node * n as f64).ceil() as u64).div_ceil(p.rfec_ports.max(1) as u64);
    let area = p.interposer_mm[0] * p.interposer_mm[1];
    let nf = n as f64;
    let interposer =
        interposers as f64 * area * p.cmos_usd_per_mm2 * p.interposer_cmos_multiplier * x / nf;
    let fau = faus as f64 * p.fau_usd * x / nf;
    let rfec = rfecs as f64 * p.rfec_usd * x / nf;
    let fibre = p.fibres_per_node * p.fibre_usd * x;
    let trx = p.transceivers_per_node * node_transceivers(p, m) * p.transceiver_usd * x;
    Some(CostRow {
        log2_nodes: k,
        nodes: n,
        multiplicity: m,
        fibres_per_edge,
        switches_per_interposer: per_interposer,
        interposers,
        faus,
        rfecs,
        interposer_usd_per_node: interposer,
        fau_usd_per_node: fau,
        rfec_usd_per_node: rfec,
        fibre_usd_per_node: fibre,
        transceiver_usd_per_node: trx,
        usd_per_node: interposer + fau + rfec + fibre + trx,
    })
}

/// `v` must be one of `allowed` (the error lists them).
fn one_of(key: &str, v: &str, allowed: &[&str]) -> Result<(), ConfigError> {
    if allowed.contains(&v) {
        return Ok(());
    }
    Err(bad(
        key,
        format!("{v:?}"),
        format!("expected one of {}", allowed.join(", ")),
    ))
}

fn bad(key: &str, v: impl std::fmt::Display, why: impl Into<String>) -> ConfigError {
    ConfigError::new(key, v, why)
}

/// Transceivers of one node of a multiplicity-m Baldur, before the
/// `transceivers_per_node` factor (see the module docs).
pub fn node_transceivers(p: &BaldurModelParams, m: u32) -> f64 {
    count_transceivers(&p.node_receivers, &p.transceiver_counting, m)
}

fn count_transceivers(receivers: &str, counting: &str, m: u32) -> f64 {
    let r = if receivers == "multiplicity" {
        m as f64
    } else {
        1.0
    };
    if counting == "lane" {
        (1.0 + r) / 2.0
    } else {
        r.max(1.0)
    }
}

impl BaldurModelParams {
    pub fn from_toml(text: &str) -> Result<Self, ConfigError> {
        let p: Self = from_toml_text(text, "")?;
        if p.min_log2_nodes < 2 || p.min_log2_nodes > p.max_log2_nodes || p.max_log2_nodes > 24 {
            return Err(bad(
                "min_log2_nodes",
                format!("{}..{}", p.min_log2_nodes, p.max_log2_nodes),
                "need 2 <= min_log2_nodes <= max_log2_nodes <= 24",
            ));
        }
        if p.gates_per_switch.is_empty() || p.gates_per_switch.len() > 16 {
            return Err(bad(
                "gates_per_switch",
                p.gates_per_switch.len(),
                "give 1..16 entries (m = 1, 2, ...)",
            ));
        }
        if !(p.drop_threshold > 0.0 && p.drop_threshold < 1.0) {
            return Err(bad("drop_threshold", p.drop_threshold, "must be in (0, 1)"));
        }
        for (i, name) in p.patterns.iter().enumerate() {
            one_of(
                &format!("patterns[{i}]"),
                name,
                &["random_permutation", "transpose", "bisection"],
            )?;
        }
        if !(p.interposer_mm.iter().all(|&v| v.is_finite() && v > 0.0)
            && p.fiber_pitch_um.is_finite()
            && p.fiber_pitch_um > 0.0)
        {
            return Err(bad(
                "fiber_pitch_um",
                p.fiber_pitch_um,
                "interposer edges and the fibre pitch must be positive",
            ));
        }
        if p.fau_channels == 0 || p.rfec_ports == 0 {
            return Err(bad(
                "fau_channels",
                format!("{} / rfec_ports {}", p.fau_channels, p.rfec_ports),
                "an FAU and an RFEC need at least one channel / port",
            ));
        }
        if p.cost_multipliers
            .iter()
            .any(|x| !(x.is_finite() && *x > 0.0))
        {
            return Err(bad(
                "cost_multipliers",
                format!("{:?}", p.cost_multipliers),
                "price factors must be positive",
            ));
        }
        let choices: [(&str, &str, &[&str]); 2] = [
            (
                "node_receivers",
                &p.node_receivers,
                &["one", "multiplicity"],
            ),
            (
                "transceiver_counting",
                &p.transceiver_counting,
                &["module", "lane"],
            ),
        ];
        for (key, v, allowed) in choices {
            one_of(key, v, allowed)?;
        }
        if !(2..=24).contains(&p.awgr_log2_nodes) {
            return Err(bad("awgr_log2_nodes", p.awgr_log2_nodes, "need 2..=24"));
        }
        if p.patterns.is_empty() {
            return Err(bad("patterns", "[]", "give at least one pattern"));
        }
        for (k, v) in [
            ("gate_power_mw", p.gate_power_mw),
            ("transceiver_power_w", p.transceiver_power_w),
            ("transceivers_per_node", p.transceivers_per_node),
            ("serdes_power_w", p.serdes_power_w),
            ("serdes_per_node", p.serdes_per_node),
            ("retx_buffer_power_w", p.retx_buffer_power_w),
            ("cmos_usd_per_mm2", p.cmos_usd_per_mm2),
            ("interposer_cmos_multiplier", p.interposer_cmos_multiplier),
            ("fau_usd", p.fau_usd),
            ("rfec_usd", p.rfec_usd),
            ("fibres_per_node", p.fibres_per_node),
            ("fibre_usd", p.fibre_usd),
            ("transceiver_usd", p.transceiver_usd),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(bad(k, v, "must be a finite number >= 0"));
            }
        }
        Ok(p)
    }
}

/// Destinations of one one-shot sample (`u32::MAX`: the node does not send).
pub(crate) fn destinations(pattern: &str, n: u32, rng: &mut crate::rng::SimRng) -> Vec<HostId> {
    let d: Vec<Option<HostId>> = match pattern {
        "random_permutation" => derangement(n, rng).into_iter().map(Some).collect(),
        "transpose" => fixed_destinations(n, &FixedMap::Transpose, rng),
        _ => fixed_destinations(n, &FixedMap::Bisection, rng),
    };
    d.into_iter().map(|x| x.unwrap_or(u32::MAX)).collect()
}

/// One-shot injection on one random 2^k-node wiring of multiplicity m: for
/// each batch of destinations (one packet per node, `u32::MAX` = none), the
/// packets dropped. Memory: the wiring of one stage and one switch per packet.
pub fn one_shot(k: u32, m: u32, wiring_seed: u64, batches: &[Vec<HostId>]) -> Vec<u64> {
    let n = 1usize << k;
    let mu = m as usize;
    let mut rng = RngStreams::new(wiring_seed).stream("baldur.wiring");
    let mut next = vec![0u32; n * mu];
    let mut perm = Vec::new();
    let mut taken = vec![0u32; n];
    // Current switch per packet (u32::MAX: not sending or dropped).
    let mut at: Vec<Vec<u32>> = batches
        .iter()
        .map(|d| {
            (0..n)
                .map(|i| {
                    if d[i] == u32::MAX {
                        u32::MAX
                    } else {
                        (i / 2) as u32
                    }
                })
                .collect()
        })
        .collect();
    let mut dropped = vec![0u64; batches.len()];
    for s in 0..k {
        if s + 1 < k {
            wire_stage(k, m, s, Some(&mut rng), &mut perm, &mut next);
        }
        for (bi, d) in batches.iter().enumerate() {
            taken.iter_mut().for_each(|t| *t = 0);
            for (i, sw) in at[bi].iter_mut().enumerate() {
                if *sw == u32::MAX {
                    continue;
                }
                let b = ((d[i] >> (k - 1 - s)) & 1) as usize;
                let dir = *sw as usize * 2 + b;
                let j = taken[dir];
                if j >= m {
                    *sw = u32::MAX;
                    dropped[bi] += 1;
                    continue;
                }
                taken[dir] = j + 1;
                if s + 1 < k {
                    *sw = next[dir * mu + j as usize];
                }
            }
        }
    }
    dropped
}

#[derive(Clone, Debug, Serialize)]
struct OneShotRow {
    log2_nodes: u32,
    nodes: u64,
    multiplicity: u32,
    pattern: String,
    packets: u64,
    dropped: u64,
    drop_rate: f64,
}

/// The one-shot search at 2^k nodes: its rows, and the smallest m (with its
/// worst drop rate) under `drop_threshold` for every pattern, if any.
fn choose(
    p: &BaldurModelParams,
    k: u32,
    streams: &RngStreams,
) -> (Vec<OneShotRow>, Option<(u32, f64)>) {
    let n = 1u64 << k;
    let samples = (p.packets_per_point / n).max(1) as usize;
    let mut rng = streams.stream(&format!("one_shot.{k}"));
    let traffic: Vec<(String, Vec<HostId>)> = p
        .patterns
        .iter()
        .flat_map(|pat| (0..samples).map(move |_| pat.clone()))
        .map(|pat| {
            let d = destinations(&pat, n as u32, &mut rng);
            (pat, d)
        })
        .collect();
    let batches: Vec<Vec<HostId>> = traffic.iter().map(|(_, d)| d.clone()).collect();
    let mut rows = Vec::new();
    for m in 1..=p.gates_per_switch.len() as u32 {
        let drops = one_shot(k, m, p.seed ^ ((k as u64) << 32 | m as u64), &batches);
        let mut worst: f64 = 0.0;
        for pat in &p.patterns {
            let (mut sent, mut lost) = (0u64, 0u64);
            for ((name, d), &x) in traffic.iter().zip(&drops) {
                if name == pat {
                    sent += d.iter().filter(|&&v| v != u32::MAX).count() as u64;
                    lost += x;
                }
            }
            let rate = lost as f64 / sent.max(1) as f64;
            worst = worst.max(rate);
            rows.push(OneShotRow {
                log2_nodes: k,
                nodes: n,
                multiplicity: m,
                pattern: pat.clone(),
                packets: sent,
                dropped: lost,
                drop_rate: rate,
            });
        }
        if worst < p.drop_threshold {
            return (rows, Some((m, worst)));
        }
    }
    (rows, None)
}

/// TL-switch power per node of a 2^k-node Baldur of multiplicity m, W.
fn switch_w_per_node(p: &BaldurModelParams, k: u32, m: u32) -> f64 {
    k as f64 / 2.0 * p.gates_per_switch[m as usize - 1] as f64 * p.gate_power_mw / 1000.0
}

/// Power per node besides the switches: transceivers, SerDes, retransmission buffer.
fn node_w(p: &BaldurModelParams, count: f64) -> f64 {
    count * (p.transceivers_per_node * p.transceiver_power_w + p.serdes_per_node * p.serdes_power_w)
        + p.retx_buffer_power_w
}

fn evaluate(
    params_toml: &str,
    options: &serde_json::Value,
) -> Result<serde_json::Value, ConfigError> {
    #[derive(Deserialize, Default)]
    #[serde(deny_unknown_fields)]
    struct Options {}
    let _: Options = super::options_from_json(options)?;
    let p = BaldurModelParams::from_toml(params_toml)?;
    let streams = RngStreams::new(p.seed);
    let mut rows = Vec::new();
    let mut chosen = Vec::new();
    let mut power = Vec::new();
    let mut sensitivity = Vec::new();
    let mut costs: Vec<CostRow> = Vec::new();
    let mut cost_sensitivity = Vec::new();
    for k in p.min_log2_nodes..=p.max_log2_nodes {
        let n = 1u64 << k;
        let (r, pick) = choose(&p, k, &streams);
        rows.extend(r);
        chosen.push(json!({
            "log2_nodes": k, "nodes": n,
            "multiplicity": pick.map(|x| x.0), "worst_drop_rate": pick.map(|x| x.1),
        }));
        if let Some((m, _)) = pick {
            if let Some(c) = cost(&p, k, m, 1.0) {
                costs.push(c);
            }
            for &x in &p.cost_multipliers {
                if let Some(c) = cost(&p, k, m, x) {
                    cost_sensitivity.push(json!({
                        "log2_nodes": k, "nodes": c.nodes, "cost_multiplier": x,
                        "usd_per_node": c.usd_per_node,
                    }));
                }
            }
            let gates = p.gates_per_switch[m as usize - 1] as f64;
            let switches_per_node = k as f64 / 2.0;
            let switch_w = switch_w_per_node(&p, k, m);
            let count = node_transceivers(&p, m);
            let other = node_w(&p, count);
            for &x in &p.switch_power_multipliers {
                sensitivity.push(json!({
                    "log2_nodes": k, "nodes": n, "switch_power_multiplier": x,
                    "switch_w_per_node": switch_w * x, "w_per_node": switch_w * x + other,
                }));
            }
            power.push(json!({
                "log2_nodes": k, "nodes": n, "multiplicity": m,
                "switches": (n / 2) * k as u64, "tl_gates_per_node": switches_per_node * gates,
                "switch_w_per_node": switch_w,
                "transceivers_per_node": count * p.transceivers_per_node,
                "transceiver_w_per_node": count * p.transceivers_per_node * p.transceiver_power_w,
                "serdes_w_per_node": count * p.serdes_per_node * p.serdes_power_w,
                "retx_buffer_w_per_node": p.retx_buffer_power_w,
                "w_per_node": switch_w + other,
            }));
        }
    }
    let w = |i: usize| power.get(i).and_then(|r| r["w_per_node"].as_f64());
    let first_w = w(0);
    let last_w = w(power.len().saturating_sub(1));
    let m_at = |k: u32| {
        chosen
            .iter()
            .find(|c| c["log2_nodes"] == k)
            .and_then(|c| c["multiplicity"].as_u64())
    };
    // Power per node at the smallest and largest scale under each way of
    // counting a node's transceivers (the rest of the model as configured).
    let (m_min, m_max) = (m_at(p.min_log2_nodes), m_at(p.max_log2_nodes));
    let mut readings = Vec::new();
    for (recv, counting) in [
        ("one", "module"),
        ("multiplicity", "module"),
        ("multiplicity", "lane"),
    ] {
        let at = |k: u32, m: Option<u64>| {
            m.map(|m| {
                let m = m as u32;
                switch_w_per_node(&p, k, m) + node_w(&p, count_transceivers(recv, counting, m))
            })
        };
        let (a, b) = (at(p.min_log2_nodes, m_min), at(p.max_log2_nodes, m_max));
        readings.push(json!({
            "node_receivers": recv, "transceiver_counting": counting,
            "transceivers_min_scale": m_min.map(|m| count_transceivers(recv, counting, m as u32)),
            "transceivers_max_scale": m_max.map(|m| count_transceivers(recv, counting, m as u32)),
            "w_per_node_min_scale": a, "w_per_node_max_scale": b,
            "power_growth_max_vs_min": match (a, b) { (Some(a), Some(b)) => Some(b / a), _ => None },
        }));
    }
    // §VII: the TL chips' power per node at the AWGR comparison's scale.
    let (awgr_rows, awgr_pick) = choose(&p, p.awgr_log2_nodes, &streams);
    let awgr = json!({
        "log2_nodes": p.awgr_log2_nodes, "nodes": 1u64 << p.awgr_log2_nodes,
        "multiplicity": awgr_pick.map(|x| x.0), "worst_drop_rate": awgr_pick.map(|x| x.1),
        "tl_w_per_node": awgr_pick.map(|x| switch_w_per_node(&p, p.awgr_log2_nodes, x.0)),
        "one_shot": awgr_rows,
    });
    let paper_points = json!({
        "multiplicity_1k": m_at(10),
        "switch_w_1k": m_at(10).map(|m| p.gates_per_switch[m as usize - 1] as f64 * p.gate_power_mw / 1000.0),
        "awgr_multiplicity": awgr["multiplicity"],
        "awgr_tl_w_per_node": awgr["tl_w_per_node"],
        "multiplicity_max_scale": m_at(p.max_log2_nodes),
        "power_growth_max_vs_min": match (first_w, last_w) { (Some(a), Some(b)) => Some(b / a), _ => None },
        "w_per_node_min_scale": first_w,
        "w_per_node_max_scale": last_w,
        "cost_usd_per_node_1k": costs.iter().find(|c| c.log2_nodes == 10).map(|c| c.usd_per_node),
        "cost_growth_max_vs_min": match (costs.first(), costs.last()) { (Some(a), Some(b)) => Some(b.usd_per_node / a.usd_per_node), _ => None },
        "interposer_share_1k": costs.iter().find(|c| c.log2_nodes == 10).map(|c| c.interposer_usd_per_node / c.usd_per_node),
        "one_shot_transpose_1k": (1..=5).map(|m| rows.iter().find(|r| r.log2_nodes == 10 && r.multiplicity == m && r.pattern == "transpose").map(|r| r.drop_rate)).collect::<Vec<_>>(),
    });
    Ok(json!({
        "params": serde_json::to_value(&p).expect("params serialise"),
        "one_shot": rows,
        "chosen": chosen,
        "power": power,
        "sensitivity": sensitivity,
        "cost": costs,
        "cost_sensitivity": cost_sensitivity,
        "readings": readings,
        "awgr": awgr,
        "paper_points": paper_points,
    }))
}

pub const MODEL: super::Model = super::Model {
    name: "baldur",
    description: "Baldur §IV-E one-shot worst-case injection (multiplicity for 1K..1M nodes), §VI-A power per node with the 0.5x/2x switch-power sensitivity, and §VI-B cost per node from the paper's component counts with assumed prices (0.5x/2x)",
    evaluate,
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_scales_choose_a_multiplicity_and_report_power() {
        let r = evaluate(
            "min_log2_nodes = 6\nmax_log2_nodes = 10\npackets_per_point = 65536\n",
            &serde_json::Value::Null,
        )
        .unwrap();
        let m1k = r["paper_points"]["multiplicity_1k"].as_u64().unwrap();
        assert!((2..=5).contains(&m1k), "{}", r["chosen"]);
        // Power at 1K with m: 5 switches per node x gates x 0.406 mW + 2.934 W.
        let g = TABLE_V_GATES[m1k as usize - 1] as f64;
        let w = r["paper_points"]["w_per_node_max_scale"].as_f64().unwrap();
        assert!(
            (w - (5.0 * g * 0.406e-3 + 1.5 + 0.693 + 0.741)).abs() < 1e-9,
            "{w}"
        );
    }

    /// A node with 1 transmitter and r receivers: r SFP28 modules ("module")
    /// or (1 + r) / 2 ("lane"); one receiver is one module either way. The
    /// power rows and the readings table use the same count.
    #[test]
    fn transceiver_counts_and_the_awgr_scale() {
        assert_eq!(count_transceivers("one", "lane", 4), 1.0);
        assert_eq!(count_transceivers("one", "module", 4), 1.0);
        assert_eq!(count_transceivers("multiplicity", "module", 4), 4.0);
        assert_eq!(count_transceivers("multiplicity", "lane", 4), 2.5);
        let r = evaluate(
            "min_log2_nodes = 6\nmax_log2_nodes = 7\npackets_per_point = 8192\nnode_receivers = \"multiplicity\"\ntransceiver_counting = \"lane\"\n",
            &serde_json::Value::Null,
        )
        .unwrap();
        let row = &r["power"][0];
        let m = row["multiplicity"].as_f64().unwrap();
        let w = 3.0 * TABLE_V_GATES[m as usize - 1] as f64 * 0.406e-3
            + (1.0 + m) / 2.0 * (1.5 + 0.693)
            + 0.741;
        assert!(
            (row["w_per_node"].as_f64().unwrap() - w).abs() < 1e-9,
            "{row}"
        );
        assert_eq!(r["readings"][2]["w_per_node_min_scale"], row["w_per_node"]);
        // 32 nodes: 2.5 switches per node, TL gates only.
        let am = r["awgr"]["multiplicity"].as_u64().unwrap() as usize;
        let tl = r["awgr"]["tl_w_per_node"].as_f64().unwrap();
        assert!((tl - 2.5 * TABLE_V_GATES[am - 1] as f64 * 0.406e-3).abs() < 1e-12);
        let e = BaldurModelParams::from_toml("node_receivers = \"two\"").unwrap_err();
        assert_eq!(e.key, "node_receivers");
    }

    #[test]
    fn bad_parameters_name_their_key() {
        let e = BaldurModelParams::from_toml("patterns = [\"hotspot\"]").unwrap_err();
        assert_eq!(e.key, "patterns[0]");
        let e = BaldurModelParams::from_toml("max_log2_nodes = 30").unwrap_err();
        assert_eq!(e.key, "min_log2_nodes");
        let e = BaldurModelParams::from_toml("gate_power = 1.0").unwrap_err();
        assert!(e.reason.contains("gate_power"), "{e}");
    }

    /// Hand-worked 1K, m = 4: 251 fibres per 32 mm edge, 31 switches per
    /// interposer, 17 per stage, 170 interposers; 248 fibres per edge = 4
    /// FAUs of 64, x 17 x 11 boundaries = 748; 2,048 fibres / 288 = 8 RFECs.
    #[test]
    fn cost_counts_by_hand_at_1k() {
        let p = BaldurModelParams::default();
        let c = cost(&p, 10, 4, 1.0).unwrap();
        assert_eq!(
            (
                c.fibres_per_edge,
                c.switches_per_interposer,
                c.interposers,
                c.faus,
                c.rfecs
            ),
            (251, 31, 170, 748, 8)
        );
        let total =
            170.0 * 320.0 * 0.5 * 5.0 + 748.0 * 150.0 + 8.0 * 2000.0 + 1024.0 * (20.0 + 40.0);
        assert!((c.usd_per_node - total / 1024.0).abs() < 1e-9);
        // Every price x2 doubles the cost.
        let d = cost(&p, 10, 4, 2.0).unwrap();
        assert!((d.usd_per_node - 2.0 * c.usd_per_node).abs() < 1e-9);
        // More multiplicity, fewer switches per interposer, never cheaper.
        for k in 4..=20 {
            let a = cost(&p, k, 4, 1.0).unwrap().usd_per_node;
            let b = cost(&p, k, 5, 1.0).unwrap().usd_per_node;
            assert!(b >= a, "k={k}");
        }
    }
}
