"""Every claim in experiments/ checks something the paper says, or says it is
a sanity line; the scorecard counts only the former (issue 26, section 1)."""
from __future__ import annotations

import math

import pandas as pd
import pytest

import photonet.reproduce as R
from photonet.reproduce.experiment import CHECKS, claim_check
from photonet.reproduce.numbers import scorecard, verdict


def _claims():
    for name in R.papers():
        for f in R.load_paper(name).figures:
            for c in f.claims:
                yield name, f.id, c


def test_every_claim_in_experiments_is_a_number_a_range_quoted_words_or_a_sanity_line():
    seen = set()
    for name, fid, c in _claims():
        where = f"{name}/{fid}: {c['what']}"
        assert c["check"] in CHECKS, where
        seen.add(c["check"])
        if c["check"] == "number":
            assert math.isfinite(c["paper"]) and 0 < c["tolerance"] < 10, where
        elif c["check"] == "range":
            assert c["range"][0] <= c["range"][1] and c.get("quote"), where
        elif c["check"] == "words":
            assert c.get("expect") and c.get("quote"), where
        else:
            assert c.get("sanity") is True and c.get("expect"), where
    assert seen == set(CHECKS)


@pytest.mark.parametrize("claim, err", [
    ({"what": "x", "paper_text": "large"}, "must check something"),
    ({"what": "x", "expect": "> 1"}, "must check something"),          # words need their quote
    ({"what": "x", "paper": 2.0}, "needs a `tolerance`"),
    ({"what": "x", "sanity": True}, "needs `expect`"),
    ({"what": "x", "tolerance": 0.1, "expect": "> 1", "quote": "q"}, "applies to a `paper` number"),
])
def test_a_claim_that_checks_nothing_is_refused(claim, err):
    with pytest.raises(R.ConfigError, match=err):
        claim_check("f.toml: claim 'x'", dict(claim))


def test_verdicts_and_the_scorecard_count_sanity_lines_apart():
    num = {"check": "number", "paper": 10.0, "tolerance": 0.25}
    assert verdict(num, 12.4) == "reproduced"
    assert verdict(num, 13.0) == "unexplained gap"
    assert verdict({**num, "gap": "measured: ..."}, 13.0) == "explained gap"
    assert verdict(num, float("nan")) == "not attempted"
    rng = {"check": "range", "range": [1.9, 6.3]}
    assert (verdict(rng, 2.0), verdict(rng, 11.9)) == ("reproduced", "unexplained gap")
    words = {"check": "words", "expect": "> 0.8"}
    assert (verdict(words, 0.85), verdict(words, 0.63), verdict(words, 0.805)) == ("reproduced", "unexplained gap", "unexplained gap")
    sanity = {"check": "sanity", "expect": "> 1"}
    assert (verdict(sanity, 5.0), verdict(sanity, 0.5)) == ("sanity ok", "sanity failed")
    nums = pd.DataFrame({"verdict": [verdict(num, 12.0), verdict(sanity, 5.0), verdict(sanity, 0.5), verdict(words, 0.6)]})
    card = scorecard(nums)
    assert card["reproduced"] == 1 and card["unexplained gap"] == 1 and card["claims (counted)"] == 2
    assert card["sanity lines (apart)"] == 2 and card["sanity failed"] == 1


def test_readme_scorecards_block_is_the_generators_output():
    """The README's scorecards are written by `docs_gen --readme` from the
    quick-scale numbers.csv: the block parses back into the same table."""
    from pathlib import Path

    from photonet import docs_gen

    text = (Path(docs_gen.ROOT) / "README.md").read_text()
    block = text.split(docs_gen.README_BEGIN, 1)[1].split(docs_gen.README_END, 1)[0].strip()
    rows = [[c.strip() for c in ln.strip("|").split("|")] for ln in block.splitlines()]
    names = rows[0][1:]
    assert names == list(docs_gen.README_NAMES.values())
    cards = {n: {r[0]: int(r[1 + i]) for r in rows[2:]} for i, n in enumerate(names)}
    assert [r[0] for r in rows[2:]] == ["reproduced", "explained gap", "unexplained gap", "not attempted", "sanity lines (apart)"]
    assert docs_gen.readme_scorecards(cards) == block
    # and the block is what the generator writes into a README
    tmp = Path(docs_gen.ROOT) / "results" / "README-scorecards-test.md"
    tmp.parent.mkdir(exist_ok=True)
    tmp.write_text(f"x\n{docs_gen.README_BEGIN}\nold\n{docs_gen.README_END}\ny\n")
    try:
        keyed = dict(zip(docs_gen.README_NAMES, cards.values()))
        docs_gen.write_readme_scorecards(keyed, tmp)
        assert tmp.read_text() == f"x\n{docs_gen.README_BEGIN}\n{block}\n{docs_gen.README_END}\ny\n"
    finally:
        tmp.unlink()


# --------------------------------------------------------------------------- the points a claim reads

def _synthetic_table(fig, metrics, seed: int) -> pd.DataFrame:
    """Every (series, x) of ``fig`` with random values of ``metrics`` (a few
    NaN, a few points not run), as table() would give, without a simulation."""
    import random

    rnd = random.Random(seed)
    rows = []
    for s in fig.series:
        for x in fig.xs:
            status = "pending" if rnd.random() < 0.05 else rnd.choice(["done", "cached"])
            rows.append({"figure": fig.id, "series": s.label, "fabric": s.fabric, "x": x, "status": status, "key": "",
                         **{m: float("nan") if rnd.random() < 0.05 else rnd.uniform(0.1, 10.0) for m in metrics}})
    return pd.DataFrame(rows)


def _same(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))


def _restricted(g: pd.DataFrame, reads) -> pd.DataFrame:
    return g[[(s, x) in reads for s, x in zip(g["series"], g["x"])]]


@pytest.mark.parametrize("name", R.papers())
def test_claim_reads_names_every_point_a_claim_reads(name):
    """The oracle behind a reading alternative running only the points its
    claims read: for every claim of every figure in experiments/, the value
    from a table of only the points claim_reads names (for that claim, and
    for all the figure's claims, as build_points(claims_only=True) keeps)
    equals the value from the full table: on random values, NaNs and points
    not run included (five seeds, so that dropping the x of a max is caught)."""
    from photonet.reproduce.numbers import claim_reads, evaluate_claim

    p = R.load_paper(name)
    n = 0
    for fig in p.figures:
        if fig.is_model:
            continue
        every = [pt for c in fig.claims for pt in claim_reads(c, fig.xs)]
        for seed in range(5):
            g = _synthetic_table(fig, sorted({c["metric"] for c in fig.claims}), seed)
            for c in fig.claims:
                m = p.metrics[c["metric"]]
                full = evaluate_claim(g, c, m)[0]
                own = evaluate_claim(_restricted(g, claim_reads(c, fig.xs)), c, m)[0]
                union = evaluate_claim(_restricted(g, every), c, m)[0]
                where = f"{name}/{fig.id} seed {seed}: {c['what']}: full {full}, own points {own}, figure's {union}"
                assert _same(full, own) and _same(full, union), where
                n += math.isfinite(full)
    assert n > 0  # the test compared numbers, not only NaNs


def test_claim_reads_is_what_an_alternative_builds():
    """build_points(claims_only=True): the figures' claims' points only; a
    figure without claims has none. Baldur's Fig. 6(a) (5 loads x 5 series)
    claims ratios of two series at one load."""
    from photonet.reproduce.numbers import claim_reads

    p = R.load_paper("baldur")
    figs, fps = R.build_points(p, "quick", only=["fig06a"], available=[])  # nothing built: nothing prepared
    _, few = R.build_points(p, "quick", only=["fig06a"], available=[], claims_only=True)
    fig = figs[0]
    want = {pt for c in fig.claims for pt in claim_reads(c, fig.xs)}
    assert {(fp.series, fp.x) for fp in few} == want
    assert len(few) < len(fps) == len(fig.series) * len(fig.xs)
    assert [fp for fp in fps if (fp.series, fp.x) in want] == few


def test_a_geomean_claim_reads_the_x_values_of_its_own_series_in_their_order():
    """A geomean over x sums logs in the order of the x values: those of the
    claim's series, not of whichever series comes first in the table (which,
    in an alternative's table of only the points claims read, may be one x
    of another claim), so the alternative's value is the full table's, to
    the last bit."""
    from photonet.reproduce.numbers import evaluate_claim

    xs = [0.1, 0.3, 0.5, 0.7, 0.9]
    vals = {0.1: 0.22, 0.3: 8.38, 0.5: 5.57, 0.7: 6.43, 0.9: 1.87}  # their log sum depends on the order
    rows = [{"series": lab, "x": x, "status": "done", "m": vals[x] if lab == "a" else 1.0} for lab in ("a", "b") for x in xs]
    c = {"metric": "m", "kind": "ratio", "a": "a", "b": "b", "at": "geomean"}
    full = evaluate_claim(pd.DataFrame(rows), c)[0]
    # another claim's point first: series c at the last x
    first = pd.DataFrame([{"series": "c", "x": 0.9, "status": "done", "m": 1.0}] + rows)
    assert evaluate_claim(first, c)[0] == full
    assert full == math.exp(sum(math.log(vals[x]) for x in xs) / len(xs))
