//! A result is keyed on its complete config (`Config::to_toml`): the keys of a
//! shared table that the selected variant never reads are left out of it
//! (`FabricModule::unread_keys`), so a reading that moves only the dragonfly
//! reuses the multi-butterfly's runs. The oracle that this is safe: a run with
//! each such key changed (set directly, past the pruning) is identical to the
//! default's, flow by flow.

use photonet::config::Config;
use photonet::fabric::hpc::{DragonflyRouting, HpcParams};
use photonet::fabric::negotiator::{NegotiatorParams, ProjectorBundle, ProjectorOrder};
use photonet::run::{prepare, simulate, Paths};
use photonet::units::{Rate, SimTime};

fn base(fabric: &str, hosts: u32) -> String {
    format!(
        "fabric = \"{fabric}\"
seed = 3
[topology]
racks = {hosts}
servers_per_rack = 1
uplinks = 1
uplink_rate = \"25Gbps\"
[workload]
load = 0.6
[workload.sizes]
dist = \"pareto\"
shape = 1.5
mean = \"4KB\"
[stop]
flows = 400
drain = true
"
    )
}

/// Every flow's (start, finish) in picoseconds.
fn finishes(cfg: &Config) -> Vec<(u64, Option<u64>)> {
    let p = prepare(cfg, &Paths::default()).unwrap_or_else(|e| panic!("{e}"));
    let r = simulate(p, &mut |_| true).unwrap_or_else(|e| panic!("{e}"));
    (0..r.flows.len())
        .map(|i| (r.flows.start_ps[i], r.flows.finish(i)))
        .collect()
}

#[test]
fn a_key_the_variant_never_reads_leaves_its_complete_config_with_a_warning() {
    let mb = base("multibutterfly", 16);
    let moved =
        format!("{mb}[hpc]\ndragonfly_routing = \"minimal\"\ndragonfly_global_rate = \"10Gbps\"\n");
    let c = Config::from_toml(&moved).unwrap();
    assert_eq!(c.to_toml(), Config::from_toml(&mb).unwrap().to_toml());
    assert!(
        c.warnings.iter().any(|w| w
            == "[hpc] sets dragonfly_routing, dragonfly_global_rate but fabric = \"multibutterfly\" does not read it"),
        "{:?}",
        c.warnings
    );
    assert!(!c.to_toml().contains("dragonfly"), "{}", c.to_toml());
    // A key it reads still moves it.
    let m2 = Config::from_toml(&format!("{mb}[hpc]\nmultiplicity = 2\n")).unwrap();
    assert_ne!(m2.to_toml(), c.to_toml());
    assert!(m2.warnings.is_empty(), "{:?}", m2.warnings);

    // The other way round for the dragonfly (72 hosts: p = 2, a = 4, h = 2).
    let df = base("dragonfly", 72);
    let d0 = Config::from_toml(&df).unwrap();
    let d_mb = Config::from_toml(&format!("{df}[hpc]\nmultiplicity = 2\n")).unwrap();
    assert_eq!(d_mb.to_toml(), d0.to_toml());
    let d_min =
        Config::from_toml(&format!("{df}[hpc]\ndragonfly_routing = \"minimal\"\n")).unwrap();
    assert_ne!(d_min.to_toml(), d0.to_toml());
    // Shared keys stay in both.
    for c in [&c, &d0] {
        assert!(c.to_toml().contains("switch_latency"), "{}", c.to_toml());
    }
}

/// A variant, its host count and edits of keys it never reads.
type Case = (&'static str, u32, Vec<(&'static str, fn(&mut HpcParams))>);

#[test]
fn the_keys_left_out_change_no_run() {
    let cases: [Case; 2] = [
        (
            "multibutterfly",
            16,
            vec![
                ("dragonfly_p", |p| p.dragonfly_p = 2),
                ("dragonfly_routing", |p| {
                    p.dragonfly_routing = DragonflyRouting::Minimal
                }),
                ("dragonfly_rates", |p| {
                    p.dragonfly_terminal_rate = Some(Rate::gbps(5));
                    p.dragonfly_local_rate = Some(Rate::gbps(5));
                    p.dragonfly_global_rate = Some(Rate::gbps(5));
                }),
                ("local_link_delay", |p| {
                    p.local_link_delay = SimTime::ns(900)
                }),
            ],
        ),
        (
            "dragonfly",
            72,
            vec![
                ("multiplicity", |p| p.multiplicity = 2),
                ("ejection_links", |p| p.ejection_links = 1),
                ("random_wiring", |p| p.random_wiring = false),
                ("round_up_nodes", |p| p.round_up_nodes = true),
            ],
        ),
    ];
    for (fabric, hosts, edits) in cases {
        let c0 = Config::from_toml(&base(fabric, hosts)).unwrap();
        let want = finishes(&c0);
        assert!(want.iter().all(|f| f.1.is_some()), "{fabric}: unfinished");
        for (name, edit) in edits {
            let mut c = c0.clone();
            c.edit::<HpcParams>(edit);
            assert_eq!(finishes(&c), want, "{fabric}: {name} changed the run");
        }
        // The oracle can fail: a key the variant reads changes the run.
        let mut c = c0.clone();
        c.edit::<HpcParams>(|p| p.switch_latency = SimTime::ns(900));
        assert_ne!(finishes(&c), want, "{fabric}: switch_latency moved nothing");
    }
}

#[test]
fn projector_bundle_is_keyed_only_under_projector() {
    // 8 ToRs of 4 ports: a ToR's bundle is 4 ports' scheduled phases, so the
    // two bundles differ where a source has under 4 destinations queued.
    let neg = base("negotiator", 8).replace("uplinks = 1", "uplinks = 4");
    let c0 = Config::from_toml(&neg).unwrap();
    let tor = Config::from_toml(&format!(
        "{neg}[negotiator]\nprojector_bundle = \"tor\"\nprojector_order = \"by_delay\"\n"
    ))
    .unwrap();
    assert!(!c0.to_toml().contains("projector_"), "{}", c0.to_toml());
    assert_eq!(tor.to_toml(), c0.to_toml());
    assert!(
        tor.warnings
            .iter()
            .any(|w| w == "[negotiator] sets projector_bundle, projector_order but algorithm = \"negotiator\" does not read it"),
        "{:?}",
        tor.warnings
    );
    // Set past the pruning, NegotiaToR Matching's run does not move.
    let want = finishes(&c0);
    assert!(want.iter().all(|f| f.1.is_some()), "unfinished");
    let mut c = c0.clone();
    c.edit::<NegotiatorParams>(|p| {
        p.projector_bundle = ProjectorBundle::Tor;
        p.projector_order = ProjectorOrder::ByDelay;
    });
    assert_eq!(finishes(&c), want, "projector_* moved NegotiaToR Matching");

    // Under ProjecToR the key is in the complete config, and it is read.
    let pj = format!("{neg}[negotiator]\nalgorithm = \"projector\"\n");
    let p0 = Config::from_toml(&pj).unwrap();
    assert!(
        p0.to_toml().contains("projector_bundle = \"port\""),
        "{}",
        p0.to_toml()
    );
    let pt = Config::from_toml(&format!("{pj}projector_bundle = \"tor\"\n")).unwrap();
    assert!(pt.warnings.is_empty(), "{:?}", pt.warnings);
    assert_ne!(pt.to_toml(), p0.to_toml());
    assert_ne!(finishes(&pt), finishes(&p0), "the ToR bundle moved nothing");
    assert!(p0
        .to_toml()
        .contains("projector_order = \"per_bundle_age\""));
    let pi = Config::from_toml(&format!("{pj}projector_order = \"interleaved\"\n")).unwrap();
    assert!(pi.warnings.is_empty(), "{:?}", pi.warnings);
    assert_ne!(finishes(&pi), finishes(&p0), "interleaved moved nothing");
    let po = Config::from_toml(&format!("{pj}projector_order = \"by_delay\"\n")).unwrap();
    assert_ne!(po.to_toml(), p0.to_toml());
}
