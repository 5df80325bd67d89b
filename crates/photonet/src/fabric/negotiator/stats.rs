//! NegotiaToR's statistics: the slot loop's counters and the rows the
//! fabric reports (layout, matching, queues, failures, relay, ToR-to-ToR FCT
//! of mice).

use super::source::Flows;
use super::Negotiator;
use crate::fabric::FabricStats;
use crate::units::SimTime;

/// With `wait_stats`: one flow's record of where it waited.
#[derive(Clone, Copy)]
pub(super) struct FlowWait {
    /// End of the slot that sent its first byte (MAX: none yet).
    pub first: SimTime,
    /// End of the slot that sent its last byte.
    pub last: SimTime,
    /// Bytes its pair's source queue held when it arrived.
    pub ahead: u64,
    /// Its last byte left in a scheduled slot (else piggybacked).
    pub last_scheduled: bool,
    /// Its pair's queue, with it, was above the request threshold on arrival.
    pub requested: bool,
}

/// With `wait_stats`: per-flow records and the pairs' REQUEST-to-data waits.
///
/// A pair's *fresh* request is a first-round REQUEST in an epoch after one
/// it did not request in; its wait ends at the data epoch of the first
/// matching whose process started at or after it (so a pair requesting
/// epoch after epoch counts once, from its first REQUEST), or when it stops
/// requesting unserved (its queue fell to the threshold by piggybacking).
pub(super) struct Waits {
    pub flows: Vec<FlowWait>,
    /// Per pair: the epoch of its open fresh request (MAX: none).
    since: Vec<u64>,
    /// Per pair: the epoch of its latest REQUEST.
    last_req: Vec<u64>,
    /// Pairs with a fresh request open.
    open: Vec<u32>,
    /// Epochs from a fresh REQUEST to the data epoch of its first matched
    /// port (2 at the least with the default pipeline).
    pub request_to_data: Vec<u32>,
    /// Fresh requests that ended unserved.
    pub drained_unserved: u64,
    /// Epochs from a REQUEST to its data epoch ((3·iterations − 1)·k).
    span: u64,
}

impl Waits {
    pub fn new(n: usize, span: u64) -> Waits {
        Waits {
            flows: Vec::new(),
            since: vec![u64::MAX; n * n],
            last_req: vec![u64::MAX; n * n],
            open: Vec::new(),
            request_to_data: Vec::new(),
            drained_unserved: 0,
            span,
        }
    }
    /// First-round REQUEST of `pair` at epoch `e`.
    pub fn requested(&mut self, pair: usize, e: u64) {
        let fresh = self.last_req[pair] == u64::MAX || self.last_req[pair] + 1 < e;
        if fresh && self.since[pair] == u64::MAX {
            self.since[pair] = e;
            self.open.push(pair as u32);
        }
        self.last_req[pair] = e;
    }
    /// After epoch `e`'s REQUESTs: a fresh request whose pair has not
    /// requested since any process that could still answer it ends unserved.
    pub fn requests_done(&mut self, e: u64) {
        let (since, last, drained) = (&mut self.since, &self.last_req, &mut self.drained_unserved);
        let span = self.span;
        self.open.retain(|&p| {
            let p = p as usize;
            if since[p] == u64::MAX {
                return false;
            }
            if last[p] + span < e {
                since[p] = u64::MAX;
                *drained += 1;
                return false;
            }
            true
        });
    }
    /// `pair` has matched ports for data epoch `data` by the process that
    /// started at epoch `start`: a fresh request it answers is served.
    pub fn matched(&mut self, pair: usize, start: u64, data: u64) {
        let x = self.since[pair];
        if x != u64::MAX && start >= x {
            self.since[pair] = u64::MAX;
            self.request_to_data.push((data - x) as u32);
        }
    }
}

/// Counters of the slot loop.
#[derive(Default, Clone, Debug)]
pub(super) struct Counters {
    pub slots: u64,
    pub epochs: u64,
    pub piggyback_bytes: u64,
    pub scheduled_bytes: u64,
    pub matched_port_slots: u64,
    pub used_port_slots: u64,
    pub queue_samples: u64,
    pub queue_sum: f64,
}

/// With invariant checks: the slot each receive port last heard a sender,
/// and how often one heard two in one slot.
pub(super) struct Contention {
    pub check: bool,
    rx_seen: Vec<u64>,
    pub count: u64,
}

impl Contention {
    pub fn new(check: bool, ports: usize) -> Contention {
        Contention {
            check,
            rx_seen: if check { vec![u64::MAX; ports] } else { vec![] },
            count: 0,
        }
    }
    /// Receive port `key` hears a sender in global slot `g`.
    #[inline]
    pub fn heard(&mut self, key: usize, g: u64) {
        if self.rx_seen[key] == g {
            self.count += 1;
        }
        self.rx_seen[key] = g;
    }
}

/// ToR-to-ToR FCT of mice (< `mice_below`) that reached their destination
/// ToR by `end`: (p99 µs, mean µs, count, unfinished).
fn tor_fct_mice(
    flows: &Flows,
    mice_below: u64,
    end: crate::units::SimTime,
) -> (f64, f64, f64, f64) {
    let mut v: Vec<u64> = Vec::new();
    let mut unfinished = 0u64;
    for f in &flows.0 {
        if f.bytes >= mice_below || f.bytes == 0 {
            continue;
        }
        if f.tor_done <= end {
            v.push((f.tor_done - f.start).0);
        } else {
            unfinished += 1;
        }
    }
    if v.is_empty() {
        return (f64::NAN, f64::NAN, 0.0, unfinished as f64);
    }
    v.sort_unstable();
    let p99 = crate::recorder::percentile_sorted(&v, 99.0) as f64 / 1e6;
    let mean = v.iter().map(|&x| x as f64).sum::<f64>() / v.len() as f64 / 1e6;
    (p99, mean, v.len() as f64, unfinished as f64)
}

/// The `wait_*` rows: the pairs' REQUEST-to-data waits (epochs), and for
/// all mice and for the tail (ToR-to-ToR FCT at or above its p99): mean
/// size, epochs from arrival to the first byte's slot end and from there
/// to the last byte's, and the shares whose last byte was scheduled, that
/// found data queued for their pair, and whose arrival made (or found) the
/// pair's queue above the request threshold.
fn wait_rows(f: &Negotiator, w: &Waits, p99_us: f64, rows: &mut Vec<(&'static str, f64)>) {
    let mut r = w.request_to_data.clone();
    r.sort_unstable();
    let at = |q: f64| -> f64 {
        if r.is_empty() {
            return f64::NAN;
        }
        r[((q * (r.len() - 1) as f64).round()) as usize] as f64
    };
    rows.push(("wait_pair_runs", r.len() as f64));
    rows.push(("wait_pair_runs_drained_unserved", w.drained_unserved as f64));
    rows.push(("wait_request_to_data_epochs_p50", at(0.5)));
    rows.push(("wait_request_to_data_epochs_p90", at(0.9)));
    rows.push(("wait_request_to_data_epochs_p99", at(0.99)));
    rows.push((
        "wait_request_to_data_epochs_mean",
        r.iter().map(|&x| x as f64).sum::<f64>() / r.len().max(1) as f64,
    ));
    let epoch = f.l.epoch.0 as f64;
    let cut = (p99_us * 1e6) as u64;
    let end = f.time.end;
    // [count, bytes, first, span, last scheduled, behind data, requested]
    let mut all = [0f64; 7];
    let mut tail = [0f64; 7];
    for (i, fl) in f.flows.0.iter().enumerate() {
        let x = &w.flows[i];
        if fl.bytes >= f.mice_below || fl.bytes == 0 || fl.tor_done > end || x.first == SimTime::MAX
        {
            continue;
        }
        let row = [
            1.0,
            fl.bytes as f64,
            (x.first - fl.start).0 as f64 / epoch,
            (x.last - x.first).0 as f64 / epoch,
            x.last_scheduled as u8 as f64,
            (x.ahead > 0) as u8 as f64,
            x.requested as u8 as f64,
        ];
        let is_tail = (fl.tor_done - fl.start).0 >= cut;
        for (k, v) in row.into_iter().enumerate() {
            all[k] += v;
            if is_tail {
                tail[k] += v;
            }
        }
    }
    let names: [[&'static str; 7]; 2] = [
        [
            "wait_mice_count",
            "wait_mice_bytes_mean",
            "wait_mice_first_byte_epochs_mean",
            "wait_mice_first_to_last_epochs_mean",
            "wait_mice_share_last_scheduled",
            "wait_mice_share_behind_data",
            "wait_mice_share_requested",
        ],
        [
            "wait_tail_mice_count",
            "wait_tail_mice_bytes_mean",
            "wait_tail_mice_first_byte_epochs_mean",
            "wait_tail_mice_first_to_last_epochs_mean",
            "wait_tail_mice_share_last_scheduled",
            "wait_tail_mice_share_behind_data",
            "wait_tail_mice_share_requested",
        ],
    ];
    for (sums, names) in [(all, names[0]), (tail, names[1])] {
        rows.push((names[0], sums[0]));
        for (name, sum) in names.into_iter().zip(sums).skip(1) {
            rows.push((name, sum / sums[0].max(1.0)));
        }
    }
}

fn ratio(a: u64, b: u64) -> f64 {
    if b > 0 {
        a as f64 / b as f64
    } else {
        f64::NAN
    }
}

pub(super) fn stats(f: &Negotiator) -> FabricStats {
    let l = &f.l;
    let c = &f.c;
    let m = f.matching.counters();
    let mut r = f.matching.ratios().to_vec();
    r.sort_by(|a, b| a.partial_cmp(b).expect("finite"));
    let pct = |p: f64| -> f64 {
        if r.is_empty() {
            return f64::NAN;
        }
        let i = ((p / 100.0) * (r.len() - 1) as f64).round() as usize;
        r[i] as f64
    };
    let mut rows: Vec<(&str, f64)> = vec![
        ("tors", l.n as f64),
        ("ports", l.s as f64),
        ("speedup", l.speedup()),
        ("epoch_ns", l.epoch.0 as f64 / 1e3),
        ("predefined_slots", l.pre_slots as f64),
        ("scheduled_slots", l.sched_slots as f64),
        ("piggyback_payload_bytes", l.pre_payload as f64),
        ("scheduled_payload_bytes", l.sched_payload as f64),
        ("pipeline_step_epochs", l.k as f64),
        ("slots_simulated", c.slots as f64),
        ("epochs_simulated", c.epochs as f64),
        ("requests", m.requests as f64),
        ("grants", m.grants as f64),
        ("accepts", m.accepts as f64),
        ("match_ratio", ratio(m.accepts, m.grants)),
        ("match_ratio_epoch_p5", pct(5.0)),
        ("match_ratio_epoch_p50", pct(50.0)),
        ("match_ratio_epoch_p95", pct(95.0)),
        ("ports_withheld_by_receiver_limit", m.ports_withheld as f64),
        ("piggyback_bytes", c.piggyback_bytes as f64),
        ("scheduled_bytes", c.scheduled_bytes as f64),
        (
            "scheduled_port_slot_use",
            ratio(c.used_port_slots, c.matched_port_slots),
        ),
        ("peak_tor_queue_bytes", f.src.peak_tor_queue as f64),
        (
            "mean_tor_queue_bytes",
            if c.queue_samples > 0 {
                c.queue_sum / c.queue_samples as f64
            } else {
                0.0
            },
        ),
        ("peak_host_queue_bytes", f.edge.peak_bytes() as f64),
        ("requests_lost", m.requests_lost as f64),
        ("grants_lost", m.grants_lost as f64),
        ("packets_lost", f.fail.packets_lost as f64),
        ("bytes_retransmitted", f.fail.bytes_lost as f64),
        ("contention_violations", f.contention.count as f64),
        ("relay_requests", m.relay_requests as f64),
        ("relay_refused_by_intermediate", m.relay_refused as f64),
        ("relay_accepts", m.relay_accepts as f64),
        ("relayed_bytes", f.relay.relayed_bytes as f64),
        ("failure_window_goodput_ratio", f.fail.goodput_ratio()),
    ];
    let (p99, mean, count, unfinished) = tor_fct_mice(&f.flows, f.mice_below, f.time.end);
    rows.push(("tor_fct_mice_p99_us", p99));
    rows.push(("tor_fct_mice_mean_us", mean));
    rows.push(("tor_fct_mice_count", count));
    rows.push(("tor_fct_mice_unfinished", unfinished));
    if let Some(w) = f.matching.waits() {
        wait_rows(f, w, p99, &mut rows);
    }
    let mut out: FabricStats = rows.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
    // With relay on: every intermediate's relayed bytes, zeros included.
    let via = f.relay.relayed_via.iter().enumerate();
    out.extend(via.map(|(m, &b)| (format!("relayed_bytes_via_{m}"), b as f64)));
    out
}
