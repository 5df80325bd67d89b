use super::*;
use crate::units::Rate;

fn bad(toml: &str) -> ConfigError {
    Config::from_toml(toml).expect_err("should be rejected")
}

#[test]
fn empty_config_is_the_default() {
    assert_eq!(Config::from_toml("").unwrap(), Config::default());
    let d = Config::default();
    assert_eq!(d.topology.hosts(), 3072);
    assert_eq!(d.topology.host_rate(), Rate(16_666_666_666));
}

#[test]
fn round_trips_through_toml() {
    let mut c = Config::default();
    c.workload.sizes = SizesConfig::cdf("x.cdf");
    c.workload.pattern = PatternConfig {
        kind: PatternKind::Incast,
        degree: Some(4),
        size: Some(ByteSize(1000)),
        file: None,
        ..Default::default()
    };
    c.stop.duration = Some(SimTime::ms(3));
    let text = c.to_toml();
    assert_eq!(Config::from_toml(&text).unwrap(), c, "{text}");
}

#[test]
fn unknown_keys_are_named() {
    let e = bad("[workload]\nlod = 0.5\n");
    assert!(e.reason.contains("unknown field `lod`"), "{e}");
    assert!(e.key.contains("workload"), "{e}");
    let e = bad("speed = 3\n");
    assert!(e.reason.contains("unknown field `speed`"), "{e}");
    let e = bad("[workload.sizes]\ndist = \"pareto\"\nshape = 1.5\nmean = \"1KB\"\nextra = 1\n");
    assert!(e.reason.contains("extra"), "{e}");
}

#[test]
fn malformed_units_name_key_and_value() {
    let e = bad("[topology]\nuplink_rate = \"50Gbs\"\n");
    assert_eq!(e.key, "topology.uplink_rate");
    assert!(
        e.reason.contains("50Gbs") && e.reason.contains("unknown unit"),
        "{e}"
    );
    let e = bad("[esn]\nbase_latency = 5\n");
    assert!(
        e.key == "esn.base_latency" && e.reason.contains("no unit"),
        "{e}"
    );
    let e = bad("[workload.sizes]\ndist = \"fixed\"\nsize = \"-3B\"\n");
    assert_eq!(e.key, "workload.sizes.size");
    assert!(e.reason.contains("negative"), "{e}");
}

#[test]
fn impossible_values_are_rejected_with_reasons() {
    let e = bad("[workload]\nload = 0\n");
    assert_eq!((e.key.as_str(), e.value.as_str()), ("workload.load", "0"));
    let e = bad("[workload]\nload = -0.5\n");
    assert!(e.reason.contains("> 0"), "{e}");
    let e = bad("[workload.sizes]\ndist = \"fixed\"\nsize = \"0B\"\n");
    assert_eq!(e.key, "workload.sizes.size");
    let e = bad("[topology]\nuplink_rate = \"0Gbps\"\n");
    assert_eq!(e.key, "topology.uplink_rate");
    let e = bad("[topology]\nserver_rate = \"0bps\"\n");
    assert_eq!(e.key, "topology.server_rate");
    let e = bad("[workload.sizes]\ndist = \"pareto\"\nshape = 1.0\nmean = \"1KB\"\n");
    assert_eq!(e.key, "workload.sizes.shape");
    let e = bad("fabric = \"warp\"\n");
    assert!(e.key == "fabric" && e.reason.contains("esn"), "{e}");
    let e = bad("[topology]\nracks = 0\n");
    assert_eq!(e.key, "topology.racks");
    let e = bad("[stop]\nflows = 0\n");
    assert_eq!(e.key, "stop.flows");
    let e = bad("fabric = \"esn_osub\"\n[esn_osub]\noversubscription = 0.5\n");
    assert_eq!(e.key, "esn_osub.oversubscription");
    let e = bad("[workload.pattern]\nkind = \"incast\"\ndegree = 5000\nsize = \"1KB\"\n");
    assert_eq!(e.key, "workload.pattern.degree");
    let e = bad("[workload.sizes]\ndist = \"zipf\"\n");
    assert!(
        e.key == "workload.sizes.dist" && e.reason.contains("zipf"),
        "{e}"
    );
    let e = bad("[workload.sizes]\ndist = \"pareto\"\nshape = 1.5\n");
    assert!(
        e.key == "workload.sizes.mean" && e.reason.contains("required"),
        "{e}"
    );
    let e = bad("[workload.sizes]\ndist = \"fixed\"\nsize = \"1KB\"\nshape = 2.0\n");
    assert!(
        e.key == "workload.sizes.shape" && e.reason.contains("does not apply"),
        "{e}"
    );
}
