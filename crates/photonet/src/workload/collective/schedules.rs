//! The collectives' step schedules: each algorithm is a step
//! schedule of point-to-point transfers between the ranks of a group, where
//! a transfer waits for the ones whose data it forwards. The schedules
//! follow their published definitions:
//!
//! - **Ring all-reduce**, reduce-scatter and all-gather: Patarasuk & Yuan,
//!   "Bandwidth optimal all-reduce algorithms for clusters of workstations",
//!   JPDC 69(2), 2009. The message is cut into n segments; in step k of the
//!   reduce-scatter rank r sends segment (r − k) mod n to rank r + 1, then
//!   the all-gather circulates the reduced segments the same way: 2(n − 1)
//!   steps of S/n bytes.
//! - **Recursive halving-doubling** (Rabenseifner's all-reduce): Thakur,
//!   Rabenseifner & Gropp, "Optimization of collective communication
//!   operations in MPICH", IJHPCA 19(1), 2005, §4.4. Reduce-scatter by
//!   recursive halving (step k: partner r XOR n/2^(k+1), S/2^(k+1) bytes),
//!   then all-gather by recursive doubling (partner r XOR 2^k, S·2^k/n
//!   bytes): 2·log2(n) steps; n must be a power of two.
//! - **Double binary tree** all-reduce: Sanders, Speck & Träff, "Two-tree
//!   algorithms for full bandwidth broadcast, reduction and scan", Parallel
//!   Computing 35(12), 2009 (the construction NCCL 2.4 uses). Two in-order
//!   binary trees, the second the first shifted by one rank (mirrored for an
//!   odd n), so every rank is a leaf in at least one; each tree reduces half
//!   the message to its root and broadcasts it back down, pipelined in
//!   `chunks`.
//! - **All-to-all**, direct (every rank sends S/n to every other at once)
//!   and pairwise exchange (Thakur et al. 2005 §4.6: n − 1 steps; in step k
//!   rank r sends to r + k and receives from r − k).
//! - **Broadcast**: pipelined ring (chain from the root, the NCCL ring
//!   broadcast) and binomial tree (Thakur et al. 2005 §4.1: in round k the
//!   ranks below 2^k relative to the root send to rank + 2^k).
//! - **Pipeline-parallel point-to-point**: GPipe (Huang et al., NeurIPS 2019):
//!   `chunks` micro-batches flow forward stage 0 → n − 1, then backward; each
//!   hop waits for the stage's compute (`compute`).
//!

use super::{Algorithm, CollectiveKind};
use std::cmp::Reverse;

/// A transfer of one instance, between ranks; deps index earlier transfers.
#[derive(Clone, Debug, PartialEq)]
pub struct Transfer {
    pub src: u32,
    pub dst: u32,
    pub bytes: u64,
    pub deps: Vec<usize>,
    /// Whether the job's compute time passes before it (pipeline hops).
    pub compute: bool,
}

/// `total` bytes cut into `k` pieces, the first `total % k` one byte larger.
pub(super) fn piece(total: u64, k: u64, i: u64) -> u64 {
    total / k + u64::from(i < total % k)
}

fn t(src: u32, dst: u32, bytes: u64, deps: Vec<usize>) -> Transfer {
    Transfer {
        src,
        dst,
        bytes,
        deps,
        compute: false,
    }
}

/// Ring steps `from..to` of the 2(n − 1)-step all-reduce (reduce-scatter is
/// 0..n−1, all-gather n−1..2(n−1)): in step k rank r sends segment
/// (r − k) mod n to r + 1, after receiving step k − 1 from r − 1 and
/// finishing its own step k − 1 send.
fn ring_steps(n: u32, s: u64, from: u32, to: u32) -> Vec<Transfer> {
    let mut out = Vec::new();
    let nn = n as usize;
    for k in from..to {
        for r in 0..n {
            let seg = (r + n - k % n) % n;
            let mut deps = Vec::new();
            if k > from {
                let base = (k - from - 1) as usize * nn;
                deps.push(base + ((r + n - 1) % n) as usize);
                deps.push(base + r as usize);
            }
            out.push(t(r, (r + 1) % n, piece(s, n as u64, seg as u64), deps));
        }
    }
    out
}

/// Recursive halving (reduce-scatter) and/or doubling (all-gather) for a
/// power-of-two n: each step waits for the rank's previous exchange both ways.
fn halving_doubling(n: u32, s: u64, halve: bool, double: bool) -> Vec<Transfer> {
    let log = n.trailing_zeros();
    let mut sizes = Vec::new();
    let mut dist = Vec::new();
    if halve {
        for k in 0..log {
            dist.push(n >> (k + 1));
            sizes.push(s >> (k + 1));
        }
    }
    if double {
        for k in 0..log {
            dist.push(1 << k);
            sizes.push((s << k) / n as u64);
        }
    }
    let mut out = Vec::new();
    let nn = n as usize;
    for (step, (&d, &b)) in dist.iter().zip(&sizes).enumerate() {
        for r in 0..n {
            let mut deps = Vec::new();
            if step > 0 {
                let base = (step - 1) * nn;
                deps.push(base + r as usize);
                deps.push(base + (r ^ dist[step - 1]) as usize);
            }
            out.push(t(r, r ^ d, b, deps));
        }
    }
    out
}

/// Parent of each rank in the in-order binary tree over 0..n (ranks as
/// 1-based positions: position p at height h = trailing zeros of p has
/// children p ± 2^(h−1); positions past n are cut, their left subtree moved
/// up). The root has none.
pub fn inorder_tree_parents(n: u32) -> Vec<Option<u32>> {
    let mut parent = vec![None; n as usize];
    fn build(lo: u32, hi: u32, parent: &mut [Option<u32>], up: Option<u32>) {
        // The subtree of positions lo..=hi (1-based): its root is the
        // position in range with the most trailing zeros.
        if lo > hi {
            return;
        }
        let mut root = lo;
        for p in lo..=hi {
            if p.trailing_zeros() > root.trailing_zeros() {
                root = p;
            }
        }
        parent[(root - 1) as usize] = up.map(|u| u - 1);
        build(lo, root - 1, parent, Some(root));
        build(root + 1, hi, parent, Some(root));
    }
    build(1, n, &mut parent, None);
    parent
}

/// The two trees of the double binary tree: rank → parent, per tree.
pub fn double_binary_trees(n: u32) -> [Vec<Option<u32>>; 2] {
    let t1 = inorder_tree_parents(n);
    // Tree 2 holds rank m(r) where tree 1 holds r: shifted by one (even n)
    // or mirrored (odd n), so that tree 1's interior ranks are leaves in it.
    let m = |r: u32| {
        if n.is_multiple_of(2) {
            (r + 1) % n
        } else {
            n - 1 - r
        }
    };
    let mut t2 = vec![None; n as usize];
    for r in 0..n {
        t2[m(r) as usize] = t1[r as usize].map(m);
    }
    [t1, t2]
}

/// Reduce up and broadcast down both trees, half the message each.
fn double_tree(n: u32, s: u64) -> Vec<Transfer> {
    let mut out = Vec::new();
    for (ti, parents) in double_binary_trees(n).iter().enumerate() {
        let bytes = piece(s, 2, ti as u64);
        let base = out.len();
        // Reduce: up[r] = index of r → parent(r), waits for r's children.
        let mut up = vec![usize::MAX; n as usize];
        let mut order: Vec<u32> = (0..n).collect();
        let depth = |mut r: u32| {
            let mut d = 0;
            while let Some(p) = parents[r as usize] {
                r = p;
                d += 1;
            }
            d
        };
        order.sort_by_key(|&r| Reverse(depth(r)));
        let children = |r: u32| (0..n).filter(move |&c| parents[c as usize] == Some(r));
        for &r in &order {
            if let Some(p) = parents[r as usize] {
                let deps = children(r).map(|c| up[c as usize]).collect();
                up[r as usize] = out.len();
                out.push(t(r, p, bytes, deps));
            }
        }
        let _ = base;
        // Broadcast down: parent → child after the parent has the result
        // (the root: after its children's reductions; others: after their
        // own parent's send reached them).
        let mut down = vec![usize::MAX; n as usize];
        order.reverse();
        for &r in &order {
            if let Some(p) = parents[r as usize] {
                let deps = match parents[p as usize] {
                    Some(_) => vec![down[p as usize]],
                    None => children(p).map(|c| up[c as usize]).collect(),
                };
                down[r as usize] = out.len();
                out.push(t(p, r, bytes, deps));
            }
        }
    }
    out
}

fn all_to_all(n: u32, s: u64, pairwise: bool) -> Vec<Transfer> {
    let mut out = Vec::new();
    let nn = n as usize;
    for k in 1..n {
        for r in 0..n {
            let dst = (r + k) % n;
            let deps = if pairwise && k > 1 {
                // The rank's previous send, and its previous receive.
                let base = (k as usize - 2) * nn;
                vec![base + r as usize, base + ((r + n - (k - 1)) % n) as usize]
            } else {
                Vec::new()
            };
            out.push(t(r, dst, piece(s, n as u64, dst as u64), deps));
        }
    }
    out
}

fn broadcast(n: u32, s: u64, ring: bool) -> Vec<Transfer> {
    let mut out = Vec::new();
    if ring {
        for r in 0..n - 1 {
            let deps = if r == 0 { vec![] } else { vec![r as usize - 1] };
            out.push(t(r, r + 1, s, deps));
        }
    } else {
        // Binomial tree: who delivered to each rank.
        let mut got: Vec<Option<usize>> = vec![None; n as usize];
        let mut k = 1;
        while k < n {
            for r in 0..k.min(n) {
                if r + k < n {
                    let deps = got[r as usize].into_iter().collect();
                    got[(r + k) as usize] = Some(out.len());
                    out.push(t(r, r + k, s, deps));
                }
            }
            k *= 2;
        }
    }
    out
}

fn pipeline(n: u32, s: u64) -> Vec<Transfer> {
    let mut out = Vec::new();
    for st in 0..n - 1 {
        let deps = if st == 0 {
            vec![]
        } else {
            vec![st as usize - 1]
        };
        out.push(Transfer {
            compute: st > 0,
            ..t(st, st + 1, s, deps)
        });
    }
    // Backward from the last stage, after its forward (and compute).
    for st in (0..n - 1).rev() {
        out.push(Transfer {
            compute: true,
            ..t(st + 1, st, s, vec![out.len() - 1])
        });
    }
    out
}

/// The step schedule of one collective over ranks 0..n (one chunk).
pub fn schedule(
    kind: CollectiveKind,
    alg: Algorithm,
    n: u32,
    s: u64,
) -> Result<Vec<Transfer>, String> {
    if !kind.allows().contains(&alg) {
        let ok: Vec<&str> = kind.allows().iter().map(|a| a.name()).collect();
        return Err(format!(
            "{} does not apply to {} (it takes: {})",
            alg.name(),
            kind.name(),
            ok.join(", ")
        ));
    }
    if n < 2 {
        return Err("a collective needs at least two participants".into());
    }
    if alg == Algorithm::HalvingDoubling && !n.is_power_of_two() {
        return Err(format!(
            "halving_doubling needs a power-of-two group (got {n} participants)"
        ));
    }
    use CollectiveKind::*;
    Ok(match (kind, alg) {
        (AllReduce, Algorithm::Ring) => ring_steps(n, s, 0, 2 * (n - 1)),
        (ReduceScatter, Algorithm::Ring) => ring_steps(n, s, 0, n - 1),
        (AllGather, Algorithm::Ring) => ring_steps(n, s, n - 1, 2 * (n - 1)),
        (AllReduce, Algorithm::HalvingDoubling) => halving_doubling(n, s, true, true),
        (ReduceScatter, Algorithm::HalvingDoubling) => halving_doubling(n, s, true, false),
        (AllGather, Algorithm::HalvingDoubling) => halving_doubling(n, s, false, true),
        (AllReduce, Algorithm::DoubleBinaryTree) => double_tree(n, s),
        (AllToAll, a) => all_to_all(n, s, a == Algorithm::Pairwise),
        (Broadcast, a) => broadcast(n, s, a == Algorithm::Ring),
        (Pipeline, _) => pipeline(n, s),
        _ => unreachable!("checked by allows()"),
    })
}
