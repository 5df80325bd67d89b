//! The floor of an exact per-hop packet engine on this machine (issue 7):
//! `cargo run --release -p photonet --example net_floor -- [k] [W] [cal|win|node|both|all] [port bytes] [div]`
//! (default k = 16, W = 25, both, 64, 1: windows of 1 µs / div).
//!
//! A minimal discrete-event kernel with nothing but the hops: the k-ary
//! fat-tree of `examples/net_bench.rs` (100 Gbps links, 1 µs propagation,
//! 4,096 B payload + 64 B header, every host sending one 2 MiB flow, 512
//! packets, to its partner in the same derangement), FIFO output ports
//! without buffer limits (a port is its `busy_until`: a packet's arrival at
//! the far end is known when it is enqueued), every host keeping a fixed
//! window of `W` data packets outstanding (sent at line rate through its
//! NIC port, one sent per ACK received), one 64 B ACK per data packet back
//! to its sender, and per-packet spraying on the up-down path by a counter
//! of the packet's source (the source picks it; the ToR takes it modulo
//! k/2, the aggregation switch its quotient modulo k/2: routing reads only
//! the packet). No transport, no recorder, no statistics. One event per
//! packet-hop: the packet's arrival at the next node.
//!
//! Three processing orders of the same events:
//! - `cal`: one global time order, `net::calendar::CalendarQueue` (the
//!   engine's own queue: 64-byte slots, packets by value), ties by payload.
//! - `win`: windowed and grouped by entity. Every event is caused by one at
//!   least one serialisation plus one propagation delay (> 1 µs, the
//!   lookahead) earlier, so the events of a window `[t, t + 1 µs)` cannot
//!   cause one another. Each event's entity — the output port it will be
//!   sent on: a switch's routed port, or a host's NIC for the ACK or data
//!   packet an arrival makes it send — is known when the event is created
//!   (routing reads only the packet). A created event is appended to its
//!   window's buffer (sequential writes); a window is bucketed by entity
//!   with a counting sort, each entity's events are sorted by (time,
//!   payload), the global order's tie-break, and processed. An entity's
//!   state (its port; a host's window and counter) is touched only by its
//!   own events, so every port sees the same packets in the same order as
//!   under `cal`, and every arrival time is the same.
//! - `node`: the same, grouped by node (switch or host) instead of output
//!   port, routing when processed — the grouping a real engine would need
//!   if routing read the node's other ports (adaptive routing) or a
//!   per-node random stream.
//!
//! `W` = 25 matches `net_bench`'s ~25,000 pending events at k = 16: every
//! outstanding packet is exactly one pending event (its data packet's or
//! its ACK's next arrival, or its wait in the NIC, which is already
//! committed), so the queue holds `W` events per host until the last
//! packets: 25 × 1,024 = 25,600 at most, a mean of ~24,600 seen per event.
//!
//! Every run first checks, at k = 4, that all three orders give the same
//! checksum over every processed event's (packet, node, time), the same
//! hop count and the same last completion; `both` and `all` also check it
//! at the chosen size. `port bytes` (16 or 64) is the stride of a
//! port's busy-until time in its array (the rest padding; far nodes are
//! an array of their own), to mimic the engine's 64-byte port line (32
//! bytes since this session) or a compact state. Prints hop events, CPU ns per hop
//! event and per delivered data packet (this thread's CPU time around the
//! kernel loop, from `/proc/thread-self/schedstat`), and the mean number of
//! pending events seen by each event (to match `net_bench`'s ~25,000 at
//! k = 16 by choosing `W`).

use photonet::net::calendar::CalendarQueue;
use std::time::Instant;

/// 100 Gbps.
const PS_PER_BYTE: u64 = 80;
const DATA_WIRE: u64 = 4_096 + 64;
const ACK_WIRE: u64 = 64;
/// Propagation of every link, ps: also the lookahead and the window.
const PROP: u64 = 1_000_000;
/// Packets per flow: 2 MiB / 4,096 B.
const PKTS: u32 = 512;
const ACK: u32 = 1 << 31;

/// A packet in flight, in its arrival event at `node`. The derived order
/// breaks ties between events at one time (the same in both orders).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
struct Pkt {
    node: u32,
    /// The sending host of the data packet (its flow).
    flow: u32,
    seq: u32,
    dst: u32,
    /// Spray counter value (low 31 bits) and the ACK flag.
    spray: u32,
}

/// The k-ary fat-tree: nodes hosts, ToRs, aggregation, core; ports NICs
/// (port h is host h's), ToR down, ToR up, aggregation down, aggregation
/// up, core down.
struct Ft {
    half: u32,
    hosts: u32,
    tor0: u32,
    agg0: u32,
    core0: u32,
    tor_down: u32,
    tor_up: u32,
    agg_down: u32,
    agg_up: u32,
    core_down: u32,
    ports: u32,
    /// Per port, the node at its far end.
    to: Vec<u32>,
}

impl Ft {
    fn new(k: u32) -> Ft {
        assert!(k >= 2 && k.is_multiple_of(2), "k = {k}: even, at least 2");
        let half = k / 2;
        let hosts = k * k * k / 4;
        let tors = k * half;
        let cores = half * half;
        let (tor0, agg0, core0) = (hosts, hosts + tors, hosts + 2 * tors);
        let tor_down = hosts;
        let tor_up = tor_down + tors * half;
        let agg_down = tor_up + tors * half;
        let agg_up = agg_down + tors * half;
        let core_down = agg_up + tors * half;
        let ports = core_down + cores * k;
        let mut ft = Ft {
            half,
            hosts,
            tor0,
            agg0,
            core0,
            tor_down,
            tor_up,
            agg_down,
            agg_up,
            core_down,
            ports,
            to: Vec::new(),
        };
        ft.to = (0..ports).map(|p| ft.far(p)).collect();
        ft
    }

    /// The node at the far end of port `p`.
    fn far(&self, p: u32) -> u32 {
        let h = self.half;
        if p < self.hosts {
            self.tor0 + p / h
        } else if p < self.tor_up {
            p - self.tor_down
        } else if p < self.agg_down {
            let (t, j) = ((p - self.tor_up) / h, (p - self.tor_up) % h);
            self.agg0 + (t / h) * h + j
        } else if p < self.agg_up {
            let (a, i) = ((p - self.agg_down) / h, (p - self.agg_down) % h);
            self.tor0 + (a / h) * h + i
        } else if p < self.core_down {
            let (a, j) = ((p - self.agg_up) / h, (p - self.agg_up) % h);
            self.core0 + (a % h) * h + j
        } else {
            let (c, pod) = (
                (p - self.core_down) / (2 * h),
                (p - self.core_down) % (2 * h),
            );
            self.agg0 + pod * h + c / h
        }
    }

    /// The port a packet arriving at `node` leaves on (a host: its NIC,
    /// for the packet the arrival makes it send).
    #[inline]
    fn route(&self, node: u32, p: &Pkt) -> u32 {
        let h = self.half;
        let spray = p.spray & !ACK;
        if node < self.hosts {
            node
        } else if node < self.agg0 {
            let t = node - self.tor0;
            if p.dst / h == t {
                self.tor_down + p.dst
            } else {
                self.tor_up + t * h + spray % h
            }
        } else if node < self.core0 {
            let a = node - self.agg0;
            if p.dst / (h * h) == a / h {
                self.agg_down + a * h + (p.dst / h) % h
            } else {
                self.agg_up + a * h + (spray / h) % h
            }
        } else {
            self.core_down + (node - self.core0) * 2 * h + p.dst / (h * h)
        }
    }
}

#[derive(Clone, Copy, Default)]
struct Host {
    /// Next data packet to send.
    next: u32,
    acked: u32,
    /// Spray counter of the packets it sends (data and ACKs).
    ctr: u32,
}

/// Where created events go.
trait Sink {
    fn push(&mut self, ft: &Ft, t: u64, p: Pkt);
}

/// Everything the kernel's events touch.
struct Kernel {
    ft: Ft,
    /// Per port, `stride` words: its busy-until time (the rest padding).
    busy: Vec<u64>,
    stride: usize,
    hosts: Vec<Host>,
    perm: Vec<u32>,
    hops: u64,
    delivered: u64,
    done: u32,
    last: u64,
    sum: u64,
}

fn mix(mut x: u64) -> u64 {
    x ^= x >> 30;
    x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x ^= x >> 27;
    x = x.wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

impl Kernel {
    fn new(k: u32, port_bytes: usize) -> Kernel {
        let ft = Ft::new(k);
        let stride = (port_bytes / 8).max(1);
        let n = ft.hosts;
        let perm = photonet::scenarios::permutation_flows(n, 1)
            .iter()
            .map(|f| f.dst)
            .collect();
        Kernel {
            busy: vec![0; ft.ports as usize * stride],
            stride,
            hosts: vec![Host::default(); n as usize],
            perm,
            ft,
            hops: 0,
            delivered: 0,
            done: 0,
            last: 0,
            sum: 0,
        }
    }

    /// Sends `p` on port `out` at `now`: FIFO at line rate, arrives one
    /// serialisation plus one propagation after it starts.
    #[inline]
    fn send(&mut self, out: u32, mut p: Pkt, now: u64, sink: &mut impl Sink) {
        let wire = if p.spray & ACK != 0 {
            ACK_WIRE
        } else {
            DATA_WIRE
        };
        let b = &mut self.busy[out as usize * self.stride];
        let end = (*b).max(now) + wire * PS_PER_BYTE;
        *b = end;
        p.node = self.ft.to[out as usize];
        sink.push(&self.ft, end + PROP, p);
    }

    fn send_data(&mut self, host: u32, now: u64, sink: &mut impl Sink) {
        let hs = &mut self.hosts[host as usize];
        let p = Pkt {
            node: 0,
            flow: host,
            seq: hs.next,
            dst: self.perm[host as usize],
            spray: hs.ctr & !ACK,
        };
        hs.next += 1;
        hs.ctr = hs.ctr.wrapping_add(1);
        self.send(host, p, now, sink);
    }

    /// Every host puts its first `w` packets on its NIC at t = 0.
    fn start(&mut self, w: u32, sink: &mut impl Sink) {
        for h in 0..self.ft.hosts {
            for _ in 0..w.min(PKTS) {
                self.send_data(h, 0, sink);
            }
        }
    }

    /// Packet `p` arrives at `p.node` at `t`; `out` is `ft.route(p.node, p)`.
    #[inline]
    fn handle(&mut self, t: u64, p: Pkt, out: u32, sink: &mut impl Sink) {
        self.hops += 1;
        let id = ((p.flow as u64) << 32 | p.seq as u64) ^ ((p.spray & ACK) as u64) << 32;
        self.sum = self
            .sum
            .wrapping_add(mix(t.wrapping_mul(0x9e37_79b9_7f4a_7c15)
                ^ id.rotate_left(20)
                ^ p.node as u64));
        if p.node >= self.ft.hosts {
            return self.send(out, p, t, sink);
        }
        let h = p.node;
        if p.spray & ACK == 0 {
            self.delivered += 1;
            let hs = &mut self.hosts[h as usize];
            let ack = Pkt {
                node: 0,
                flow: p.flow,
                seq: p.seq,
                dst: p.flow,
                spray: (hs.ctr & !ACK) | ACK,
            };
            hs.ctr = hs.ctr.wrapping_add(1);
            self.send(h, ack, t, sink);
        } else {
            let hs = &mut self.hosts[h as usize];
            hs.acked += 1;
            if hs.acked == PKTS {
                self.done += 1;
                self.last = self.last.max(t);
            }
            if hs.next < PKTS {
                self.send_data(h, t, sink);
            }
        }
    }
}

/// The global time order: the engine's calendar wheel.
struct Cal {
    q: CalendarQueue<Pkt>,
    pending_sum: u64,
}

impl Sink for Cal {
    #[inline]
    fn push(&mut self, _: &Ft, t: u64, p: Pkt) {
        self.q.push(t, p);
    }
}

fn run_cal(kern: &mut Kernel, w: u32) -> u64 {
    let mut cal = Cal {
        q: CalendarQueue::new(),
        pending_sum: 0,
    };
    kern.start(w, &mut cal);
    while let Some((t, p)) = cal.q.pop_due(u64::MAX) {
        cal.pending_sum += cal.q.len() as u64 + 1;
        let out = kern.ft.route(p.node, &p);
        kern.handle(t, p, out, &mut cal);
    }
    cal.pending_sum
}

/// A windowed event: its entity (the port it will leave on) is known at
/// creation.
#[derive(Clone, Copy, Debug, Default)]
struct WEv {
    t: u64,
    p: Pkt,
    ent: u32,
}

/// Windows of `PROP / div` (at most the lookahead), a ring of `RING` of them
/// ahead of the current one.
const RING: usize = 1024;

struct Win {
    /// Per window (absolute index modulo `RING`), its events in creation
    /// order; empty windows hold no allocation.
    ring: Vec<Vec<WEv>>,
    /// Emptied buffers, last released first (warm in cache).
    spare: Vec<Vec<WEv>>,
    cur: u64,
    pending: u64,
    /// Window length, ps.
    len: u64,
    /// Entities are nodes (switches, hosts), not output ports: a node's
    /// events are processed together, routed when processed.
    by_node: bool,
}

impl Sink for Win {
    #[inline]
    fn push(&mut self, ft: &Ft, t: u64, p: Pkt) {
        let w = t / self.len;
        assert!(w > self.cur, "window: event at {t} in window {}", self.cur);
        assert!(w - self.cur < RING as u64, "window: beyond the ring");
        let slot = &mut self.ring[(w % RING as u64) as usize];
        if slot.capacity() == 0 {
            if let Some(v) = self.spare.pop() {
                *slot = v;
            }
        }
        slot.push(WEv {
            t,
            p,
            ent: if self.by_node {
                p.node
            } else {
                ft.route(p.node, &p)
            },
        });
        self.pending += 1;
    }
}

fn run_win(kern: &mut Kernel, w: u32, div: u64, by_node: bool) -> u64 {
    let mut win = Win {
        ring: (0..RING).map(|_| Vec::new()).collect(),
        spare: Vec::new(),
        cur: 0,
        pending: 0,
        len: PROP / div,
        by_node,
    };
    kern.start(w, &mut win);
    let nent = if by_node {
        (kern.ft.core0 + kern.ft.half * kern.ft.half) as usize
    } else {
        kern.ft.ports as usize
    };
    let mut start = vec![0u32; nent + 1];
    let mut at = vec![0u32; nent + 1];
    let mut sorted: Vec<WEv> = Vec::new();
    let mut pending_sum = 0u64;
    while win.pending > 0 {
        win.cur += 1;
        let slot = (win.cur % RING as u64) as usize;
        let evs = std::mem::take(&mut win.ring[slot]);
        if evs.is_empty() {
            continue;
        }
        let n = evs.len();
        pending_sum += n as u64 * win.pending;
        win.pending -= n as u64;
        // Counting sort by entity.
        start.fill(0);
        for e in &evs {
            start[e.ent as usize + 1] += 1;
        }
        for i in 0..nent {
            start[i + 1] += start[i];
        }
        if sorted.len() < n {
            sorted.resize(n, WEv::default());
        }
        at.copy_from_slice(&start);
        for e in &evs {
            let i = &mut at[e.ent as usize];
            sorted[*i as usize] = *e;
            *i += 1;
        }
        let mut evs = evs;
        evs.clear();
        win.spare.push(evs);
        // Each entity's events in (time, payload) order.
        for ent in 0..nent {
            let (a, b) = (start[ent] as usize, start[ent + 1] as usize);
            if a == b {
                continue;
            }
            let s = &mut sorted[a..b];
            if s.len() > 1 {
                s.sort_unstable_by_key(|x| (x.t, x.p));
            }
            for &e in &*s {
                let out = if by_node {
                    kern.ft.route(e.p.node, &e.p)
                } else {
                    e.ent
                };
                kern.handle(e.t, e.p, out, &mut win);
            }
        }
    }
    pending_sum
}

/// This thread's CPU time, ns.
fn cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

struct Res {
    hops: u64,
    delivered: u64,
    sum: u64,
    last: u64,
    cpu: u64,
    wall: f64,
    mean_pending: f64,
}

/// The processing order.
#[derive(Clone, Copy, Debug)]
enum Order {
    /// One global time order (the calendar).
    Calendar,
    /// Windowed, grouped by output port.
    WinPort,
    /// Windowed, grouped by node.
    WinNode,
}

fn run(k: u32, w: u32, order: Order, port_bytes: usize, div: u64) -> Res {
    let mut kern = Kernel::new(k, port_bytes);
    let (c0, t0) = (cpu_ns(), Instant::now());
    let pending_sum = match order {
        Order::Calendar => run_cal(&mut kern, w),
        Order::WinPort => run_win(&mut kern, w, div, false),
        Order::WinNode => run_win(&mut kern, w, div, true),
    };
    let (cpu, wall) = (cpu_ns() - c0, t0.elapsed().as_secs_f64());
    assert_eq!(kern.done, kern.ft.hosts, "every flow completes");
    Res {
        hops: kern.hops,
        delivered: kern.delivered,
        sum: kern.sum,
        last: kern.last,
        cpu,
        wall,
        mean_pending: pending_sum as f64 / kern.hops as f64,
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let k: u32 = args.get(1).map_or(16, |s| s.parse().expect("k"));
    let w: u32 = args.get(2).map_or(25, |s| s.parse().expect("W"));
    let mode = args.get(3).map_or("both", |s| s.as_str());
    let port_bytes: usize = args.get(4).map_or(64, |s| s.parse().expect("port bytes"));
    // The two orders agree (small case, every run).
    let div: u64 = args
        .get(5)
        .map_or(1, |s| s.parse().expect("window divisor"));
    assert!(div >= 1, "window divisor: at least 1");
    let a = run(4, 8, Order::Calendar, 16, 1);
    for (o, d) in [(Order::WinPort, 3), (Order::WinNode, 1)] {
        let b = run(4, 8, o, 16, d);
        assert_eq!(
            (a.sum, a.hops, a.last),
            (b.sum, b.hops, b.last),
            "k = 4, {o:?}"
        );
    }
    let modes: &[Order] = match mode {
        "cal" => &[Order::Calendar],
        "win" => &[Order::WinPort],
        "node" => &[Order::WinNode],
        "both" => &[Order::Calendar, Order::WinPort],
        _ => &[Order::Calendar, Order::WinPort, Order::WinNode],
    };
    let mut sums = Vec::new();
    for &order in modes {
        let windowed = !matches!(order, Order::Calendar);
        let r = run(k, w, order, port_bytes, div);
        println!(
            "k={k} hosts={} W={w} order={} port_bytes={port_bytes} window_ps={} hops={} data_pkts={} end={}ps mean_pending={:.0} wall={:.3}s cpu={:.3}s cpu_ns/hop={:.1} cpu_ns/pkt={:.1} checksum={:016x}",
            k * k * k / 4,
            match order {
                Order::Calendar => "calendar",
                Order::WinPort => "windowed",
                Order::WinNode => "windowed_by_node",
            },
            if windowed { PROP / div } else { 0 },
            r.hops,
            r.delivered,
            r.last,
            r.mean_pending,
            r.wall,
            r.cpu as f64 / 1e9,
            r.cpu as f64 / r.hops as f64,
            r.cpu as f64 / r.delivered as f64,
            r.sum,
        );
        sums.push((r.sum, r.hops, r.last));
    }
    assert!(sums.windows(2).all(|s| s[0] == s[1]), "the orders disagree");
}
