"""Generates the documentation pages that must not drift from the code:
one page per registered fabric (its parameter table read from the registry's
documented defaults) and one page per reproduction (its scorecard and the
paper-vs-ours table, from the ``numbers.csv`` of a quick-scale
``photonet reproduce``).

    python -m photonet.docs_gen [--reproduce-from DIR] [--no-reproduce]

writes ``docs/fabrics/*.md`` and ``docs/reproductions/*.md`` (generated,
not committed). CI runs it before ``mkdocs build --strict``. The prose of a
fabric page (the model, the paper's sections, a diagram, what is validated,
the known gaps) is hand-written in ``docs/_src/fabrics/<table>.md``; a
registered fabric without one is an error here and in the tests."""
from __future__ import annotations

import argparse
import math
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Optional

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
PROSE = DOCS / "_src" / "fabrics"
FAMILY_ORDER = ["electrical", "Sirius", "NegotiaToR", "circuit", "HPC / Baldur", "ideal"]


def parameter_tables(default_config: str) -> dict[str, list[tuple[str, str, str]]]:
    """(key, default, doc) of every key, per top-level table, from the
    documented default config (``photonet default-config``)."""
    tables: dict[str, list[tuple[str, str, str]]] = {}
    current: Optional[str] = None
    prefix = ""
    doc: list[str] = []
    for line in default_config.splitlines():
        s = line.strip()
        m = re.match(r"^\[([A-Za-z0-9_.]+)\]$", s)
        if m:
            parts = m.group(1).split(".")
            current, prefix = parts[0], ".".join(parts[1:])
            tables.setdefault(current, [])
            doc = []
            continue
        if not s:
            doc = []
            continue
        kv = re.match(r"^#?\s*([A-Za-z0-9_]+)\s*=\s*(.*)$", s)
        if kv and current is not None and (not s.startswith("#") or kv.group(2) == "(not set)"):
            key = f"{prefix}.{kv.group(1)}" if prefix else kv.group(1)
            tables[current].append((key, kv.group(2), " ".join(doc)))
            doc = []
        elif s.startswith("#") and not s.startswith("# ----"):
            doc.append(s.lstrip("#").strip())
    return tables


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def fabric_page(f, siblings: list, params: list[tuple[str, str, str]], prose: str, stats: Optional[list] = None) -> str:
    """The page of one registered fabric (``stats``: its declared statistics,
    :func:`photonet.api.statistics`)."""
    L = [f"# {f.label}", ""]
    L.append(f"`fabric = \"{f.name}\"` · family **{f.family}** · short label `{f.short}` · parameters in `[{f.table}]`"
             + (" (shared with " + ", ".join(f"[`{s.name}`]({s.name}.md)" for s in siblings) + ")" if siblings else ""))
    L += ["", f"> {f.description}", "", prose.strip(), ""]
    L += [f"## Parameters `[{f.table}]`", "",
          "Generated from the registry (the parameter struct's doc comments and `Default`); "
          f"`photonet default-config --fabric {f.name}` prints the same with the common keys.", ""]
    if params:
        L += ["| key | default | what it sets |", "|---|---|---|"]
        L += [f"| `{k}` | `{_cell(v)}` | {_cell(d)} |" for k, v, d in params]
    else:
        L.append("This fabric has no parameters of its own.")
    L += ["", "## Statistics", "",
          "What a run puts in `summary.json`'s `fabric_stats`, as the registry declares it (the conformance suite "
          "checks a run emits exactly these; an experiment file naming another is refused). A `<…>` stands for a part "
          "the run names (a tier of ports, a stage, a size class).", ""]
    if stats:
        L += ["| statistic | unit | what it counts | when |", "|---|---|---|---|"]
        L += [f"| `{_cell(st.name)}` | {st.unit} | {_cell(st.doc)} | {st.when} |" for st in stats]
    else:
        L.append("This fabric declares no statistics.")
    L += ["", "## Run it", "", "```bash",
          f"photonet default-config --fabric {f.name} > my.toml      # every key, its doc and default",
          "photonet run my.toml",
          f"photonet compare --fabrics {f.name},esn --loads 0.2,0.5,0.8", "```", ""]
    return "\n".join(L)


def write_fabric_pages(out: Path = DOCS / "fabrics") -> list[Path]:
    """One page per registered fabric and the index; raises if a fabric's
    table has no hand-written prose."""
    from . import _core
    from .api import fabrics, statistics

    fabs = fabrics()
    missing = sorted({f.table for f in fabs if not (PROSE / f"{f.table}.md").is_file()})
    if missing:
        raise SystemExit(f"docs: no prose for fabric table(s) {', '.join(missing)}: write docs/_src/fabrics/<table>.md "
                         "(the model and the paper's sections, a diagram, what is validated, the known gaps)")
    params = parameter_tables(_core.default_config())
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    written = []
    for f in fabs:
        sib = [s for s in fabs if s.table == f.table and s.name != f.name]
        page = fabric_page(f, sib, params.get(f.table, []), (PROSE / f"{f.table}.md").read_text(), statistics(f.name))
        p = out / f"{f.name}.md"
        p.write_text(page)
        written.append(p)
    L = ["# Fabrics", "", "Every fabric photonet simulates, by family, as the registry declares them "
         "(`photonet.fabrics()`). Plots use one colour and marker per fabric and facet by family.", ""]
    fams = sorted({f.family for f in fabs}, key=lambda x: FAMILY_ORDER.index(x) if x in FAMILY_ORDER else 99)
    for fam in fams:
        L += [f"## {fam}", "", "| fabric | `fabric =` | short | what it models |", "|---|---|---|---|"]
        L += [f"| [{f.label}]({f.name}.md) | `{f.name}` | {f.short} | {_cell(f.description)} |" for f in fabs if f.family == fam]
        L.append("")
    (out / "index.md").write_text("\n".join(L))
    return [out / "index.md", *written]


# ---- reproductions

def scorecard(nums) -> dict[str, int]:
    """Each verdict's count (numbers.csv's `verdict` column): reproduced,
    explained gap, unexplained gap, not attempted; sanity lines apart."""
    from .reproduce.numbers import scorecard as card

    c = card(nums)
    return {k: c[k] for k in ("reproduced", "explained gap", "unexplained gap", "not attempted", "sanity lines (apart)")}


def _text(v) -> str:
    """A CSV cell as text: empty for a missing value."""
    return "" if v is None or (isinstance(v, float) and not math.isfinite(v)) else str(v)


def _fmt(v) -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "–"
    if isinstance(v, float):
        return f"{v:.3g}" if abs(v) < 1e5 else f"{v:,.0f}"
    return str(v)


def reproduction_page(paper: str, title: str, nums, figures: list[str], about: str) -> str:
    card = scorecard(nums)
    L = [f"# Reproduction: {title}", "",
         f"Generated from `numbers.csv` of `photonet reproduce {paper}` at the **quick** scale ({about}). "
         f"The paper's scale: `photonet reproduce {paper} --full`. The experiment's files: `experiments/{paper}/`.", "",
         "## Scorecard", "", "| " + " | ".join(card) + " |", "|" + "---|" * len(card), "| " + " | ".join(str(v) for v in card.values()) + " |",
         "", "A claim is reproduced when ours is within its stated tolerance of the paper's number, inside the paper's "
         "range, or in the direction the paper's quoted words state (the `check` column). Sanity lines check what the "
         "inputs guarantee and are not counted as reproducing the paper. At the quick scale absolute "
         "numbers that depend on size are flagged in the note column.", "", "## The paper's numbers next to ours", "",
         "| figure | quantity | ours | paper | check | verdict | note |", "|---|---|---|---|---|---|---|"]
    for _, r in nums.iterrows():
        paper_v = _fmt(r["paper"]) if isinstance(r["paper"], float) and math.isfinite(r["paper"]) else (_text(r["paper_text"]) or "–")
        L.append(f"| {r['figure']} | {_cell(_text(r['quantity']))} | {_fmt(r['ours'])} | {_cell(paper_v)} | {_cell(_text(r['check']))} | "
                 f"{_cell(_text(r['verdict']))} | {_cell(_text(r['note']))} |")
    L += ["", "## Figures (quick scale)", "",
          "A star marks the paper's value where it states one; hollow markers: more than 5 % of the point's flows unfinished.", ""]
    for fig in figures:
        L += [f"![{fig}]({paper}/{fig})", ""]
    return "\n".join(L)


def write_reproduction_pages(source: Optional[Path], run: bool, out: Path = DOCS / "reproductions") -> dict[str, dict]:
    """A page per experiment under ``experiments/`` and the index of their
    scorecards; ``numbers.csv`` and figures from ``source/<paper>/`` (run
    there at quick scale first when ``run`` and missing)."""
    import pandas as pd

    from .reproduce.experiment import load_paper

    papers = sorted(p.name for p in (ROOT / "experiments").iterdir() if (p / "experiment.toml").is_file())
    source = source or ROOT / "results" / "docs-reproduce"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    cards: dict[str, dict] = {}
    for name in papers:
        folder = source / name
        if run and not (folder / "numbers.csv").is_file():
            subprocess.run([sys.executable, "-m", "photonet.cli", "reproduce", name, "--out", str(folder), "--jobs", "2"],
                           check=True, stdout=subprocess.DEVNULL)
        paper = load_paper(name)
        title = paper.title or name
        if not (folder / "numbers.csv").is_file():
            (out / f"{name}.md").write_text(f"# Reproduction: {title}\n\nNot generated: run `python -m photonet.docs_gen` "
                                            f"(it runs `photonet reproduce {name}` at quick scale).\n")
            continue
        nums = pd.read_csv(folder / "numbers.csv", keep_default_na=False, na_values=[""])
        for c in ("ours", "paper", "ratio"):
            nums[c] = pd.to_numeric(nums[c], errors="coerce")
        figs = sorted(p.name for p in folder.glob("*.png"))
        (out / name).mkdir()
        for fig in figs:
            shutil.copyfile(folder / fig, out / name / fig)
        (out / f"{name}.md").write_text(reproduction_page(name, title, nums, figs, paper.scales["quick"]["about"]))
        cards[name] = scorecard(nums)
    L = ["# Reproductions", "", "Each paper's published numbers next to ours at the quick scale "
         "(`photonet reproduce <paper>`; generated by `python -m photonet.docs_gen`).", ""]
    if cards:
        keys = list(next(iter(cards.values())))
        L += ["| | " + " | ".join(f"[{p}]({p}.md)" for p in cards) + " |", "|---|" + "---|" * len(cards)]
        L += [f"| {k} | " + " | ".join(str(c[k]) for c in cards.values()) + " |" for k in keys]
    (out / "index.md").write_text("\n".join(L) + "\n")
    return cards


README_BEGIN = "<!-- scorecards: generated by `python -m photonet.docs_gen --readme` from each quick-scale numbers.csv -->"
README_END = "<!-- /scorecards -->"
README_NAMES = {"sirius": "Sirius", "negotiator": "NegotiaToR", "mordia": "Mordia + TMS", "reactor": "REACToR", "baldur": "Baldur",
                "htsim": "htsim (NDP)", "yaps": "YAPS (pFabric)"}


def readme_scorecards(cards: dict[str, dict]) -> str:
    """The README's side-by-side scorecards (one column per paper)."""
    names = list(cards)
    keys = list(next(iter(cards.values())))
    L = ["| | " + " | ".join(README_NAMES.get(n, n) for n in names) + " |", "|---|" + "---|" * len(names)]
    L += [f"| {k} | " + " | ".join(str(cards[n][k]) for n in names) + " |" for k in keys]
    return "\n".join(L)


def write_readme_scorecards(cards: dict[str, dict], readme: Path = ROOT / "README.md") -> None:
    """Replaces the README's block between README_BEGIN and README_END."""
    text = readme.read_text()
    if README_BEGIN not in text or README_END not in text:
        raise SystemExit(f"{readme}: no scorecards block ({README_BEGIN} ... {README_END})")
    head, rest = text.split(README_BEGIN, 1)
    _, tail = rest.split(README_END, 1)
    order = [n for n in README_NAMES if n in cards] + [n for n in cards if n not in README_NAMES]
    readme.write_text(head + README_BEGIN + "\n" + readme_scorecards({n: cards[n] for n in order}) + "\n" + README_END + tail)


def write_perf_notes_index(folder: Path = DOCS / "perf-notes") -> Path:
    """``perf-notes/index.md``: a link to every note in the folder (the
    detailed measurements behind the performance page)."""
    folder.mkdir(exist_ok=True)
    notes = sorted(p for p in folder.glob("*.md") if p.name != "index.md")
    L = ["# Performance notes", "", "What each speed-up measured, what was tried and dropped. "
         "The figures that hold today are on the [performance page](../performance.md).", ""]
    for p in notes:
        first = next((ln[2:].strip() for ln in p.read_text().splitlines() if ln.startswith("# ")), p.stem)
        L.append(f"- [{first}]({p.name})")
    if not notes:
        L.append("No notes yet.")
    out = folder / "index.md"
    out.write_text("\n".join(L) + "\n")
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(prog="python -m photonet.docs_gen", description=__doc__.split("\n\n")[0])
    ap.add_argument("--reproduce-from", type=Path, help="folder of <paper>/numbers.csv (default results/docs-reproduce)")
    ap.add_argument("--no-reproduce", action="store_true", help="do not run missing reproductions (their pages say so)")
    ap.add_argument("--readme", action="store_true", help="also rewrite the README's scorecards block from the same numbers.csv")
    a = ap.parse_args(argv)
    pages = write_fabric_pages()
    cards = write_reproduction_pages(a.reproduce_from, not a.no_reproduce)
    if a.readme and cards:
        write_readme_scorecards(cards)
    write_perf_notes_index()
    print(f"docs: {len(pages)} fabric pages, {len(cards)} reproduction pages")


if __name__ == "__main__":
    main()
