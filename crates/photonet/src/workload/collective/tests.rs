use super::*;

fn job(kind: CollectiveKind, alg: Algorithm, n: u32, s: u64) -> JobConfig {
    JobConfig {
        collective: kind,
        algorithm: Some(alg),
        message: ByteSize(s),
        hosts: None,
        first: None,
        count: Some(n),
        random: false,
        chunks: 1,
        iterations: 1,
        compute: SimTime::ZERO,
        start: SimTime::ZERO,
    }
}

#[test]
fn halving_doubling_steps_halve_then_double() {
    let s = 1 << 20;
    let x = schedule(CollectiveKind::AllReduce, Algorithm::HalvingDoubling, 8, s).unwrap();
    // 2·log2(8) = 6 steps of 8 transfers.
    assert_eq!(x.len(), 48);
    let sizes: Vec<u64> = x.chunks(8).map(|st| st[0].bytes).collect();
    assert_eq!(sizes, [s / 2, s / 4, s / 8, s / 8, s / 4, s / 2]);
    let partners: Vec<u32> = x.chunks(8).map(|st| st[0].dst).collect();
    assert_eq!(partners, [4, 2, 1, 1, 2, 4]);
    assert!(x
        .chunks(8)
        .all(|st| st.iter().all(|t| st[0].bytes == t.bytes)));
}

#[test]
fn ring_moves_each_segment_round_the_ring() {
    let n = 5;
    let x = schedule(CollectiveKind::AllReduce, Algorithm::Ring, n, 1000).unwrap();
    assert_eq!(x.len(), (2 * (n - 1) * n) as usize);
    // Every rank sends 2(n−1)/n of the message.
    for r in 0..n {
        let sent: u64 = x.iter().filter(|t| t.src == r).map(|t| t.bytes).sum();
        assert_eq!(sent, 2 * (n as u64 - 1) * 200);
    }
}

#[test]
fn double_binary_trees_are_complementary() {
    for n in 2..40u32 {
        let [a, b] = double_binary_trees(n);
        let interior = |p: &[Option<u32>], r: u32| p.contains(&Some(r));
        for p in [&a, &b] {
            assert_eq!(p.iter().filter(|x| x.is_none()).count(), 1, "one root");
            assert!(p.iter().all(|x| x.is_none_or(|q| q < n)));
            // At most two children.
            for r in 0..n {
                assert!(p.iter().filter(|&&x| x == Some(r)).count() <= 2);
            }
        }
        if n % 2 == 0 {
            for r in 0..n {
                assert!(!(interior(&a, r) && interior(&b, r)), "n={n} r={r}");
            }
        }
    }
}

#[test]
fn bad_groups_and_sizes_are_refused_with_the_key() {
    use Algorithm::*;
    use CollectiveKind::*;
    let mut rng = crate::rng::RngStreams::new(1).stream("collective");
    let mut refused = |j: JobConfig| build(&[j], 8, &mut rng).unwrap_err().to_string();
    let e = refused(job(AllReduce, HalvingDoubling, 6, 1 << 20));
    assert!(
        e.contains("jobs[0].hosts") && e.contains("power-of-two"),
        "{e}"
    );
    let e = refused(job(AllReduce, Ring, 8, 7));
    assert!(e.contains("jobs[0].message"), "{e}");
    let mut j = job(AllReduce, Ring, 8, 8 * 4);
    j.chunks = 5;
    let e = refused(j);
    assert!(
        e.contains("jobs[0].message") && e.contains("5 chunks"),
        "{e}"
    );
    let mut j = job(AllReduce, Ring, 2, 100);
    j.count = None;
    j.hosts = Some(vec![0, 9]);
    let e = refused(j);
    assert!(e.contains("jobs[0].hosts") && e.contains('9'), "{e}");
    let e = refused(job(AllToAll, Ring, 8, 800));
    assert!(e.contains("jobs[0].algorithm"), "{e}");
}

#[test]
fn every_collective_builds_a_valid_dag() {
    use Algorithm::*;
    use CollectiveKind::*;
    let all = [
        (AllReduce, Ring),
        (AllReduce, HalvingDoubling),
        (AllReduce, DoubleBinaryTree),
        (ReduceScatter, Ring),
        (ReduceScatter, HalvingDoubling),
        (AllGather, Ring),
        (AllGather, HalvingDoubling),
        (AllToAll, Direct),
        (AllToAll, Pairwise),
        (Broadcast, Ring),
        (Broadcast, BinomialTree),
        (Pipeline, Gpipe),
    ];
    // The pairs the conformance suite runs on every fabric.
    assert_eq!(CollectiveKind::every_algorithm().collect::<Vec<_>>(), all);
    let mut rng = crate::rng::RngStreams::new(1).stream("collective");
    for (k, a) in all {
        let mut j = job(k, a, 8, 1 << 16);
        j.chunks = 3;
        j.iterations = 2;
        j.compute = SimTime::us(1);
        let p = build(&[j], 16, &mut rng).unwrap();
        p.dag.check(16, &|i| format!("{i}")).unwrap();
        assert_eq!(p.instances.len(), 2);
    }
}
