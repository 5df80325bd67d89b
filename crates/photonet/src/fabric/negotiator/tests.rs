use super::*;
use proptest::prelude::*;

/// The oracle: the predefined links of `s` in slot `j`, port by port, as
/// `pre_dest` defines them on the parallel network, kept where the pair's
/// bit is set.
fn ports_by_port(bits: &[bool], n: usize, sp: usize, s: usize, j: usize, r: usize) -> u64 {
    let mut m = 0u64;
    for p in 0..sp {
        let o = 1 + j * sp + (p + r) % sp;
        if o >= n {
            continue;
        }
        let d = (s + o) % n;
        if bits[s * n + d] {
            m |= 1 << p;
        }
    }
    m
}

fn pack(bits: &[bool]) -> Vec<u64> {
    let mut v = vec![0u64; bits.len().div_ceil(64)];
    for (i, &b) in bits.iter().enumerate() {
        if b {
            v[i / 64] |= 1 << (i % 64);
        }
    }
    v
}

#[test]
fn pre_ports_hand_worked() {
    // N = 5, S = 2: slot 0 reaches offsets 1, 2; slot 1 offsets 3, 4.
    // Source 3 has data for ToRs 4 (offset 1) and 1 (offset 3).
    let n = 5;
    let mut bits = vec![false; n * n];
    bits[3 * n + 4] = true;
    bits[3 * n + 1] = true;
    let v = pack(&bits);
    // Slot 0, no rotation: port 0 → offset 1 (ToR 4), port 1 → ToR 0.
    assert_eq!(pre_ports(&v, n, 2, 3, 0, 0), 0b01);
    // Rotated by 1: port 0 → offset 2 (ToR 0), port 1 → offset 1 (ToR 4).
    assert_eq!(pre_ports(&v, n, 2, 3, 0, 1), 0b10);
    // Slot 1: port 0 → offset 3 (ToR 1), port 1 → offset 4 (ToR 2).
    assert_eq!(pre_ports(&v, n, 2, 3, 1, 0), 0b01);
    // Slot 2 reaches no ToR (offsets 5, 6 ≥ N).
    assert_eq!(pre_ports(&v, n, 2, 3, 2, 0), 0);
}

proptest! {
    /// The bit-extracted ports equal the port-by-port links, for every
    /// source, slot and rotation (rows crossing words, wrapping past the
    /// last ToR, a last slot with fewer offsets than ports, S up to 64).
    #[test]
    fn pre_ports_equal_the_port_by_port_links(
        n in 2usize..140,
        sp in 1usize..=64,
        seed in any::<u64>(),
        density in 0u32..=100,
    ) {
        let mut x = seed | 1;
        let bits: Vec<bool> = (0..n * n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x % 100) < density as u64
            })
            .collect();
        let v = pack(&bits);
        let slots = (n - 1).div_ceil(sp) + 1;
        for s in 0..n {
            for j in 0..slots {
                for r in 0..sp {
                    prop_assert_eq!(
                        pre_ports(&v, n, sp, s, j, r),
                        ports_by_port(&bits, n, sp, s, j, r),
                        "s {} j {} r {}", s, j, r
                    );
                }
            }
        }
    }
}
