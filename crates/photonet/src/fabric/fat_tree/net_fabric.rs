//! Any packet network of `net/` as a [`Fabric`]: what the fat-tree (with
//! DCTCP, paced, pFabric or NDP hosts) and the HPC baselines share.

use crate::fabric::{step_until, Fabric, FabricStats, Looks};
use crate::flow::Flow;
use crate::net::ndp::NdpNetwork;
use crate::net::{Network, Router};
use crate::recorder::Recorder;
use crate::units::{Rate, SimTime};

/// What a [`NetFabric`] drives: the substrate's [`Network`] or NDP's
/// [`NdpNetwork`], over any router.
pub trait PacketNet {
    fn add_flow(&mut self, now: SimTime, flow: &Flow, rec: &mut Recorder);
    fn next_event(&self) -> Option<SimTime>;
    fn advance(&mut self, now: SimTime, rec: &mut Recorder);
    fn stats(&self) -> Vec<(String, f64)>;
    fn check_invariants(&self) -> Result<(), String>;
}

/// Each network's own methods (inherent ones win the path lookup), inlined
/// into the fabric's event loop.
macro_rules! packet_net {
    ($($net:ident),*) => {$(
        impl<R: Router> PacketNet for $net<R> {
            #[inline]
            fn add_flow(&mut self, now: SimTime, flow: &Flow, rec: &mut Recorder) {
                $net::add_flow(self, now, flow, rec)
            }
            #[inline]
            fn next_event(&self) -> Option<SimTime> {
                $net::next_event(self)
            }
            #[inline]
            fn advance(&mut self, now: SimTime, rec: &mut Recorder) {
                $net::advance(self, now, rec)
            }
            fn stats(&self) -> Vec<(String, f64)> {
                $net::stats(self)
            }
            fn check_invariants(&self) -> Result<(), String> {
                $net::check_invariants(self)
            }
        }
    )*};
}
packet_net!(Network, NdpNetwork);

/// A fabric over the packet network `N` of `net/`: the network does the
/// work; `X` adds what one fabric reports besides the network's statistics
/// ([`NetExtras`]). The fat-tree ([`PacketFabric`], [`NdpFabric`]) and the
/// HPC baselines ([`HpcFabric`](crate::fabric::hpc::HpcFabric)) are this.
pub struct NetFabric<N: PacketNet, X = ()> {
    label: String,
    /// The topology's hosts (the network may have more, idle).
    hosts: usize,
    rate: Rate,
    net: N,
    extra: X,
}

/// What a [`NetFabric`] adds to its network `N`.
pub trait NetExtras<N> {
    /// Called after each `advance` of the network.
    fn after_advance(&mut self, _net: &mut N) {}
    /// Statistics besides the network's.
    fn stats(&self, _net: &N, _out: &mut FabricStats) {}
}

impl<N> NetExtras<N> for () {}

impl<N: PacketNet, X> NetFabric<N, X> {
    /// The fabric `label` over `net`, with `hosts` endpoints at `rate`.
    pub fn with_network(label: String, hosts: usize, rate: Rate, net: N, extra: X) -> Self {
        NetFabric {
            label,
            hosts,
            rate,
            net,
            extra,
        }
    }

    /// What the fabric adds besides the network.
    pub fn extras(&self) -> &X {
        &self.extra
    }

    /// The underlying packet network.
    pub fn net(&self) -> &N {
        &self.net
    }
}

impl<N: PacketNet, X: NetExtras<N>> Fabric for NetFabric<N, X> {
    fn name(&self) -> String {
        self.label.clone()
    }
    fn hosts(&self) -> usize {
        self.hosts
    }
    fn host_rate(&self) -> Rate {
        self.rate
    }
    fn add_flow(&mut self, now: SimTime, flow: &Flow, rec: &mut Recorder) {
        self.net.add_flow(now, flow, rec);
    }
    fn next_event(&self) -> Option<SimTime> {
        self.net.next_event()
    }
    fn advance(&mut self, now: SimTime, rec: &mut Recorder) {
        self.net.advance(now, rec);
        self.extra.after_advance(&mut self.net);
    }
    /// The steps one by one, without a trip through the run loop each
    /// (one step per event time: ~1 per packet-hop on a loaded network).
    fn advance_until(&mut self, now: SimTime, bound: SimTime, rec: &mut Recorder) -> u64 {
        step_until(now, bound, |t| {
            self.net.advance(t, rec);
            self.extra.after_advance(&mut self.net);
            self.net.next_event()
        })
    }
    /// The steps one by one up to the next completion (a dependent
    /// workload's release), without a trip through the run loop each.
    fn advance_until_completion(
        &mut self,
        now: SimTime,
        bound: SimTime,
        rec: &mut Recorder,
        mut looks: Looks,
        after: &mut dyn FnMut(SimTime, &Recorder, u64) -> Option<Looks>,
    ) -> u64 {
        let (mut t, mut steps) = (now, 0);
        loop {
            self.net.advance(t, rec);
            self.extra.after_advance(&mut self.net);
            steps += 1;
            if !looks.skip(t, rec) {
                match after(t, rec, looks.skipped) {
                    Some(l) => looks = l,
                    None => return steps,
                }
            }
            if rec.has_logged_completions() {
                return steps;
            }
            match self.net.next_event() {
                Some(next) if next <= bound => t = next,
                _ => return steps,
            }
        }
    }
    fn finish(&mut self, _: SimTime, _: &mut Recorder) {}
    fn stats(&self) -> FabricStats {
        let mut s: FabricStats = self.net.stats().into_iter().collect();
        self.extra.stats(&self.net, &mut s);
        s
    }
    fn check_invariants(&self) -> Result<(), String> {
        self.net.check_invariants()
    }
}

#[cfg(test)]
mod tests {
    use crate::engine::{run_arrivals, RunOutput};
    use crate::fabric::{Fabric, FabricStats};
    use crate::flow::Flow;
    use crate::recorder::Recorder;
    use crate::run::{prepare, Paths};
    use crate::units::{Rate, SimTime};
    use crate::Config;

    /// The fabric without its `advance_until_completion`: the run loop
    /// then takes one step per trip (the reference).
    struct OneStep<'a>(&'a mut (dyn Fabric + Send));

    impl Fabric for OneStep<'_> {
        fn name(&self) -> String {
            self.0.name()
        }
        fn hosts(&self) -> usize {
            self.0.hosts()
        }
        fn host_rate(&self) -> Rate {
            self.0.host_rate()
        }
        fn add_flow(&mut self, now: SimTime, flow: &Flow, rec: &mut Recorder) {
            self.0.add_flow(now, flow, rec)
        }
        fn next_event(&self) -> Option<SimTime> {
            self.0.next_event()
        }
        fn advance(&mut self, now: SimTime, rec: &mut Recorder) {
            self.0.advance(now, rec)
        }
        fn finish(&mut self, end: SimTime, rec: &mut Recorder) {
            self.0.finish(end, rec)
        }
        fn stats(&self) -> FabricStats {
            self.0.stats()
        }
    }

    /// A collective on a k = 4 fat-tree through the run loop, stepped to
    /// each completion or (`one_step`) one step per trip; `cancel_at`: the
    /// progress callback cancels once the events reach it.
    fn run(stop: &str, one_step: bool, cancel_at: u64) -> (RunOutput, FabricStats) {
        let text = format!(
            r#"
fabric = "fat_tree"
[topology]
uplink_rate = "100Gbps"
[fat_tree]
k = 4
[workload.pattern]
kind = "collective"
jobs = [
  {{collective = "all_reduce", algorithm = "ring", message = "2MB", first = 0, count = 16}},
  {{collective = "all_to_all", algorithm = "direct", message = "64KB", first = 0, count = 8}},
]
[stop]
{stop}
"#
        );
        let cfg = Config::from_toml(&text).unwrap();
        let mut p = prepare(&cfg, &Paths::default()).unwrap();
        let mut cancel = |pr: crate::engine::Progress| pr.events < cancel_at;
        let out = if one_step {
            let mut f = OneStep(&mut *p.fabric);
            run_arrivals(
                &mut f,
                &mut *p.arrivals,
                &p.stop,
                Recorder::new(None),
                &mut cancel,
            )
        } else {
            run_arrivals(
                &mut *p.fabric,
                &mut *p.arrivals,
                &p.stop,
                Recorder::new(None),
                &mut cancel,
            )
        };
        (out, p.fabric.stats())
    }

    /// Stepping a dependent workload to its next completion in one call is
    /// the run loop's one step per trip: the same flows, times, events,
    /// statistics, and the same stall or cancellation where the watchdog or
    /// the progress callback stops the run.
    #[test]
    fn stepping_to_each_completion_is_one_step_per_trip() {
        let cases = [
            ("", u64::MAX),
            ("stall_limit = \"900ns\"", u64::MAX),
            ("stall_limit = \"2us\"", u64::MAX),
            ("stall_limit = \"5us\"", u64::MAX),
            ("", 50_000),
            ("drain = true\ndrain_limit = \"40us\"", u64::MAX),
        ];
        for (stop, cancel_at) in cases {
            let (a, sa) = run(stop, false, cancel_at);
            let (b, sb) = run(stop, true, cancel_at);
            let what = format!("stop {stop:?}, cancel at {cancel_at}");
            assert_eq!(a.recorder.records(), b.recorder.records(), "{what}");
            assert_eq!(a.recorder.completed(), b.recorder.completed(), "{what}");
            assert_eq!(
                a.recorder.internal_events(),
                b.recorder.internal_events(),
                "{what}"
            );
            assert_eq!(
                (a.end_time, a.events, a.cancelled, &a.stalled),
                (b.end_time, b.events, b.cancelled, &b.stalled),
                "{what}"
            );
            assert_eq!(sa, sb, "{what}");
        }
        // The cases reach what they are for.
        assert!(run("stall_limit = \"900ns\"", false, u64::MAX)
            .0
            .stalled
            .is_some());
        assert!(run("", false, 50_000).0.cancelled);
        let whole = run("", false, u64::MAX).0;
        assert_eq!(whole.recorder.completed(), whole.recorder.flows() as u64);
    }
}
