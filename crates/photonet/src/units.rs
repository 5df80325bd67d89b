//! Simulated time, byte counts and bit rates, and the unit strings configs use
//! (`"10ns"`, `"912ps"`, `"50Gbps"`, `"562B"`, `"100KB"`, `"30ms"`).
//!
//! Time is an integer count of picoseconds so that guardbands such as 3.84 ns and
//! tuning times such as 912 ps are exact. Unit strings are parsed as exact decimals
//! (no floating point), and a value that is not a whole number of the base unit is
//! an error rather than a silent rounding.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// Simulated time in picoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SimTime(pub u64);

/// The largest value a config may give each unit type. Far beyond any
/// datacenter setting, and small enough that sums and products of a few
/// configured values cannot overflow 64 bits: a config that asks for more is
/// an error, never a wrapped (plausible-looking) number.
pub mod limits {
    /// 2^60 ps ≈ 13.3 days of simulated time.
    pub const TIME_PS: u64 = 1 << 60;
    /// 2^50 B ≈ 1.1 PB.
    pub const BYTES: u64 = 1 << 50;
    /// 2^50 b/s ≈ 1.1 Pb/s.
    pub const RATE_BPS: u64 = 1 << 50;
    /// Memory a run may need (estimated before anything is allocated): a
    /// run or a fabric that would need more is refused.
    pub const MEMORY_BYTES: u64 = 16 << 30;
}

impl SimTime {
    pub const ZERO: SimTime = SimTime(0);
    pub const MAX: SimTime = SimTime(u64::MAX);
    pub const PS: u64 = 1;
    pub const NS: u64 = 1_000;
    pub const US: u64 = 1_000_000;
    pub const MS: u64 = 1_000_000_000;
    pub const S: u64 = 1_000_000_000_000;

    pub const fn ps(v: u64) -> Self {
        SimTime(v)
    }
    pub const fn ns(v: u64) -> Self {
        SimTime(v * Self::NS)
    }
    pub const fn us(v: u64) -> Self {
        SimTime(v * Self::US)
    }
    pub const fn ms(v: u64) -> Self {
        SimTime(v * Self::MS)
    }
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / Self::S as f64
    }
    pub fn as_us_f64(self) -> f64 {
        self.0 as f64 / Self::US as f64
    }
    pub fn saturating_add(self, d: SimTime) -> SimTime {
        SimTime(self.0.saturating_add(d.0))
    }
    pub fn saturating_sub(self, d: SimTime) -> SimTime {
        SimTime(self.0.saturating_sub(d.0))
    }
    /// Parses a duration such as `"90ns"`, `"3.84ns"`, `"912ps"`, `"30ms"`.
    pub fn parse(s: &str) -> Result<SimTime, UnitError> {
        parse_with_units(s, "duration", TIME_UNITS, limits::TIME_PS).map(SimTime)
    }
}

// Time arithmetic is checked: an overflow is a bug (configs are bounded by
// `limits`), and must stop the run rather than wrap into a plausible time.
impl std::ops::Add for SimTime {
    type Output = SimTime;
    fn add(self, o: SimTime) -> SimTime {
        SimTime(self.0.checked_add(o.0).expect("simulated time overflow"))
    }
}
impl std::ops::Sub for SimTime {
    type Output = SimTime;
    fn sub(self, o: SimTime) -> SimTime {
        SimTime(self.0 - o.0)
    }
}
impl std::ops::Mul<u64> for SimTime {
    type Output = SimTime;
    fn mul(self, k: u64) -> SimTime {
        SimTime(self.0.checked_mul(k).expect("simulated time overflow"))
    }
}
impl std::ops::AddAssign for SimTime {
    fn add_assign(&mut self, o: SimTime) {
        *self = *self + o;
    }
}

impl fmt::Display for SimTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let units = [
            ("s", Self::S),
            ("ms", Self::MS),
            ("us", Self::US),
            ("ns", Self::NS),
            ("ps", 1),
        ];
        exact_decimal(f, self.0, &units)
    }
}

/// A bit rate in bits per second.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Rate(pub u64);

impl Rate {
    pub const fn gbps(v: u64) -> Rate {
        Rate(v * 1_000_000_000)
    }
    pub fn bps(self) -> u64 {
        self.0
    }
    pub fn as_f64(self) -> f64 {
        self.0 as f64
    }
    /// Time to serialise `bytes` at this rate, rounded up to a whole picosecond.
    pub fn tx_time(self, bytes: u64) -> SimTime {
        assert!(self.0 > 0, "tx_time on a zero rate");
        let num = bytes as u128 * 8 * SimTime::S as u128;
        SimTime(num.div_ceil(self.0 as u128) as u64)
    }
    /// Whole bytes that fit in `t` at this rate (rounded down).
    pub fn bytes_in(self, t: SimTime) -> u64 {
        (t.0 as u128 * self.0 as u128 / (8 * SimTime::S as u128)) as u64
    }
    pub fn parse(s: &str) -> Result<Rate, UnitError> {
        parse_with_units(s, "rate", RATE_UNITS, limits::RATE_BPS).map(Rate)
    }
}

/// Writes `v` in the largest of `units` it reaches, as an exact decimal (so
/// that every value parses back to itself).
fn exact_decimal(f: &mut fmt::Formatter<'_>, v: u64, units: &[(&str, u64)]) -> fmt::Result {
    for &(unit, scale) in units {
        if v >= scale {
            let (whole, rem) = (v / scale, v % scale);
            if rem == 0 {
                return write!(f, "{whole}{unit}");
            }
            let width = scale.ilog10() as usize;
            let frac = format!("{rem:0width$}");
            return write!(f, "{whole}.{}{unit}", frac.trim_end_matches('0'));
        }
    }
    write!(f, "{v}{}", units.last().map_or("", |u| u.0))
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        exact_decimal(
            f,
            self.0,
            &[("Gbps", 1_000_000_000), ("Mbps", 1_000_000), ("bps", 1)],
        )
    }
}

/// A byte count parsed from a unit string (`"562B"`, `"100KB"`, `"1MiB"`). KB = 1000 B.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ByteSize(pub u64);

impl ByteSize {
    pub fn parse(s: &str) -> Result<ByteSize, UnitError> {
        parse_with_units(s, "byte size", BYTE_UNITS, limits::BYTES).map(ByteSize)
    }
}

impl fmt::Display for ByteSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = self.0;
        for (unit, scale) in [("GB", 1_000_000_000u64), ("MB", 1_000_000), ("KB", 1_000)] {
            if v >= scale && v.is_multiple_of(scale) {
                return write!(f, "{}{}", v / scale, unit);
            }
        }
        write!(f, "{}B", v)
    }
}

const TIME_UNITS: &[(&str, u64)] = &[
    ("ps", 1),
    ("ns", SimTime::NS),
    ("us", SimTime::US),
    ("µs", SimTime::US),
    ("ms", SimTime::MS),
    ("s", SimTime::S),
];
const RATE_UNITS: &[(&str, u64)] = &[
    ("bps", 1),
    ("Kbps", 1_000),
    ("Mbps", 1_000_000),
    ("Gbps", 1_000_000_000),
    ("Tbps", 1_000_000_000_000),
];
const BYTE_UNITS: &[(&str, u64)] = &[
    ("B", 1),
    ("KB", 1_000),
    ("MB", 1_000_000),
    ("GB", 1_000_000_000),
    ("TB", 1_000_000_000_000),
    ("KiB", 1 << 10),
    ("MiB", 1 << 20),
    ("GiB", 1 << 30),
];

/// A unit string that could not be parsed; the message says what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed {kind} {input:?}: {reason}")]
pub struct UnitError {
    pub kind: &'static str,
    pub input: String,
    pub reason: String,
}

fn parse_with_units(
    s: &str,
    kind: &'static str,
    units: &[(&str, u64)],
    max: u64,
) -> Result<u64, UnitError> {
    let err = |reason: String| UnitError {
        kind,
        input: s.to_string(),
        reason,
    };
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = (&t[..split], t[split..].trim());
    let names: Vec<&str> = units.iter().map(|u| u.0).collect();
    if num.is_empty() {
        return Err(err(if t.starts_with('-') {
            "negative values are not allowed".into()
        } else {
            format!(
                "expected a number followed by a unit ({})",
                names.join(", ")
            )
        }));
    }
    let Some(&(_, scale)) = units.iter().find(|u| u.0 == unit) else {
        return Err(err(if unit.is_empty() {
            format!("missing unit (expected one of {})", names.join(", "))
        } else {
            format!(
                "unknown unit `{unit}` (expected one of {})",
                names.join(", ")
            )
        }));
    };
    let (int_part, frac_part) = match num.split_once('.') {
        Some((a, b)) => (a, b),
        None => (num, ""),
    };
    if frac_part.contains('.') || (int_part.is_empty() && frac_part.is_empty()) {
        return Err(err("not a number".into()));
    }
    let parse_digits = |d: &str| -> Result<u128, UnitError> {
        if d.is_empty() {
            Ok(0)
        } else {
            d.parse::<u128>()
                .map_err(|_| err("number too large".into()))
        }
    };
    let int_v = parse_digits(int_part)?;
    let frac_v = parse_digits(frac_part)?;
    if frac_part.len() > 30 {
        return Err(err("too many decimal digits".into()));
    }
    let denom = 10u128.pow(frac_part.len() as u32);
    let scale = scale as u128;
    let frac_scaled = frac_v * scale;
    if !frac_scaled.is_multiple_of(denom) {
        return Err(err(format!(
            "not a whole number of the base unit ({})",
            units[0].0
        )));
    }
    let total = int_v
        .checked_mul(scale)
        .and_then(|v| v.checked_add(frac_scaled / denom))
        .filter(|v| *v <= max as u128)
        .ok_or_else(|| {
            let (unit, scale) = units
                .iter()
                .filter(|u| max >= u.1)
                .max_by_key(|u| u.1)
                .copied()
                .unwrap_or(units[0]);
            err(format!(
                "above the largest {kind} photonet accepts (about {}{unit}), where sums of such values could overflow",
                max / scale
            ))
        })?;
    Ok(total as u64)
}

macro_rules! unit_serde {
    ($ty:ty, $what:expr) => {
        impl<'de> Deserialize<'de> for $ty {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl serde::de::Visitor<'_> for V {
                    type Value = $ty;
                    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                        write!(f, "a {} with a unit, as a string", $what)
                    }
                    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<$ty, E> {
                        <$ty>::parse(v).map_err(|e| E::custom(e.to_string()))
                    }
                    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<$ty, E> {
                        Err(E::custom(format!(
                            "{} {v} has no unit: write it as a string with a unit, e.g. \"{v}{}\"",
                            $what,
                            <$ty>::EXAMPLE_UNIT
                        )))
                    }
                    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<$ty, E> {
                        self.visit_i64(v as i64)
                    }
                    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<$ty, E> {
                        Err(E::custom(format!(
                            "{} {v} has no unit: write it as a string with a unit",
                            $what
                        )))
                    }
                }
                d.deserialize_any(V)
            }
        }
        impl Serialize for $ty {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(&self.to_string())
            }
        }
        // In a parameter table's schema a unit value is a string with its unit.
        impl schemars::JsonSchema for $ty {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($ty).into()
            }
            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                schemars::json_schema!({
                    "type": "string",
                    "description": format!("a {} with a unit, e.g. \"1{}\"", $what, <$ty>::EXAMPLE_UNIT),
                })
            }
        }
    };
}

impl SimTime {
    const EXAMPLE_UNIT: &'static str = "ns";
}
impl Rate {
    const EXAMPLE_UNIT: &'static str = "Gbps";
}
impl ByteSize {
    const EXAMPLE_UNIT: &'static str = "B";
}
unit_serde!(SimTime, "duration");
unit_serde!(Rate, "rate");
unit_serde!(ByteSize, "byte size");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_above_the_limits_are_refused_not_wrapped() {
        let e = SimTime::parse("18446744073709551615ps").unwrap_err();
        assert!(e.to_string().contains("largest duration"), "{e}");
        let e = SimTime::parse("18446744s").unwrap_err();
        assert!(e.to_string().contains("largest duration"), "{e}");
        assert!(SimTime::parse("1000000s").is_ok()); // 11.6 days
        let e = ByteSize::parse("18000000TB").unwrap_err();
        assert!(e.to_string().contains("largest byte size"), "{e}");
        let e = Rate::parse("18446744073709551615bps").unwrap_err();
        assert!(e.to_string().contains("largest rate"), "{e}");
        assert!(Rate::parse("1000Tbps").is_ok());
    }

    #[test]
    fn rates_round_trip_exactly() {
        for s in [
            "50Gbps",
            "16.666666666Gbps",
            "1bps",
            "999Kbps",
            "1000Tbps",
            "12.5Mbps",
            "1125899906842624bps",
        ] {
            let r = Rate::parse(s).unwrap();
            assert_eq!(Rate::parse(&r.to_string()).unwrap(), r, "{s} -> {r}");
        }
        assert_eq!(Rate(16_666_666_666).to_string(), "16.666666666Gbps");
        assert_eq!(Rate(999_000).to_string(), "999000bps");
    }

    #[test]
    #[should_panic(expected = "simulated time overflow")]
    fn time_overflow_stops_instead_of_wrapping() {
        let _ = SimTime(u64::MAX - 1) + SimTime(2);
    }
    use proptest::prelude::*;

    #[test]
    fn parses_the_issue_examples() {
        assert_eq!(SimTime::parse("10ns").unwrap(), SimTime(10_000));
        assert_eq!(SimTime::parse("912ps").unwrap(), SimTime(912));
        assert_eq!(SimTime::parse("3.84ns").unwrap(), SimTime(3_840));
        assert_eq!(SimTime::parse("30ms").unwrap(), SimTime(30_000_000_000));
        assert_eq!(SimTime::parse("1.5us").unwrap(), SimTime(1_500_000));
        assert_eq!(Rate::parse("50Gbps").unwrap(), Rate(50_000_000_000));
        assert_eq!(Rate::parse("2.5Gbps").unwrap(), Rate(2_500_000_000));
        assert_eq!(ByteSize::parse("562B").unwrap(), ByteSize(562));
        assert_eq!(ByteSize::parse("100KB").unwrap(), ByteSize(100_000));
        assert_eq!(ByteSize::parse("1KiB").unwrap(), ByteSize(1024));
        assert_eq!(ByteSize::parse(" 7 B ").unwrap(), ByteSize(7));
    }

    #[test]
    fn rejects_malformed_units_with_a_reason() {
        fn reason<T: std::fmt::Debug>(r: Result<T, UnitError>) -> String {
            r.unwrap_err().reason
        }
        let e = SimTime::parse("10 nss").unwrap_err();
        assert!(e.reason.contains("unknown unit `nss`"), "{e}");
        assert!(reason(SimTime::parse("10")).contains("missing unit"));
        assert!(reason(SimTime::parse("-5ns")).contains("negative"));
        assert!(reason(SimTime::parse("0.5ps")).contains("whole number"));
        assert!(reason(ByteSize::parse("1.5B")).contains("whole number"));
        assert!(Rate::parse("fast").is_err());
        assert!(SimTime::parse("1.2.3ns").is_err());
        assert!(SimTime::parse("99999999999999999999s").is_err());
        let msg = SimTime::parse("10 nss").unwrap_err().to_string();
        assert!(msg.contains("10 nss") && msg.contains("duration"), "{msg}");
    }

    #[test]
    fn tx_time_is_exact_for_the_sirius_cell() {
        // 562 B at 50 Gbps = 89.92 ns
        assert_eq!(Rate::gbps(50).tx_time(562), SimTime(89_920));
        assert_eq!(Rate::gbps(100).tx_time(1_125), SimTime(90_000));
        assert_eq!(Rate::gbps(50).bytes_in(SimTime::ns(90)), 562);
    }

    proptest! {
        #[test]
        fn display_round_trips(v in 0u64..=limits::BYTES) {
            let t = SimTime(v * 1024);
            prop_assert_eq!(SimTime::parse(&t.to_string()).unwrap(), t);
            let b = ByteSize(v);
            prop_assert_eq!(ByteSize::parse(&b.to_string()).unwrap(), b);
            let r = Rate(v);
            prop_assert_eq!(Rate::parse(&r.to_string()).unwrap(), r);
        }

        #[test]
        fn integer_ns_parse_matches_arithmetic(v in 0u64..1_000_000_000) {
            prop_assert_eq!(SimTime::parse(&format!("{v}ns")).unwrap(), SimTime(v * 1000));
            prop_assert_eq!(SimTime::parse(&format!("{v}.5ns")).unwrap(), SimTime(v * 1000 + 500));
        }

        #[test]
        fn tx_time_inverts_bytes_in(bytes in 1u64..10_000_000, gbps in 1u64..1000) {
            let r = Rate::gbps(gbps);
            let t = r.tx_time(bytes);
            prop_assert!(r.bytes_in(t) >= bytes);
            prop_assert!(r.bytes_in(SimTime(t.0 - 1)) < bytes);
        }
    }
}
