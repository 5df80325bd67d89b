"""The ``photonet`` command line."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Optional, Sequence

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

from . import _core
from ._core import SimulationError
from .config import ConfigError, complete, tomllib

console = Console(stderr=True)
out_console = Console()


def _fmt(x, digits=3):
    if x is None:
        return "-"
    if isinstance(x, float):
        # Three significant digits, but never scientific notation for a
        # number a reader compares by eye (1,234 µs, not 1.23e+03).
        s = f"{x:.{digits}g}"
        return f"{x:,.0f}" if "e+" in s else s
    return f"{x:,}" if isinstance(x, int) else str(x)


def compare_table(rows: list, cls: str, title: str, flows: list) -> Table:
    """`compare`'s table, within 100 columns: the registry's short labels
    (at most 12 characters), units in the headers, the caption saying what
    each column means; a number column is never narrower than its widest
    value, so no number is cut short."""
    heads = ("fabric", "load", "offered", "goodput", f"p99 {cls} µs", f"p99 done µs", "unfin. %", "")
    n = ", ".join(f"{f:,}" for f in flows) or "?"
    t = Table(title=title, caption=f"{n} flows per point; goodput: steady-state window, of N·R; p99 {cls}: censored "
                                   f"(unfinished flows at their elapsed time); p99 done: completed flows only; unfin.: flows not "
                                   f"done when the run stopped; ⚑: over 5 % unfinished (hollow in the plots)")
    for i, h in enumerate(heads):
        if i == 0:
            t.add_column(h, no_wrap=True, min_width=max([len(r[0]) for r in rows] + [6]))
        else:
            w = max([len(r[i]) for r in rows] + [1])
            t.add_column(h, justify="right", min_width=w, no_wrap=True)
    for r in rows:
        t.add_row(*r)
    return t


def compare_rows(table, cls: str) -> list:
    """The rows of :func:`compare_table` from compare's table (annotated)."""
    rows = []
    for _, row in table.iterrows():
        frac = row.get("unfinished_frac")
        rows.append((row.get("short", row["fabric_name"]), f"{row['load']:.2f}", f"{row['offered_load']:.3f}",
                     f"{row['goodput_steady']:.3f}", _fmt(row.get(f"fct{cls}_censored_p99_us")), _fmt(row.get(f"fct{cls}_p99_us")),
                     "-" if frac is None or frac != frac else f"{100 * frac:.1f}", "⚑" if row.get("flagged") else ""))
    return rows


def summary_table(summary: dict, title: str = "") -> Table:
    t = Table(title=title or summary["fabric"], show_header=True, header_style="bold")
    t.add_column("class")
    censored = any(st.get("unfinished") for st in summary["fct"].values())
    cols = ["done", "unfinished", "mean µs", "p50 µs", "p99 µs", "p99.9 µs", "max µs"]
    if censored:
        cols.append("p99 µs ≥ (censored)")
    for c in cols:
        t.add_column(c, justify="right")
    for cls, st in summary["fct"].items():
        row = [cls, _fmt(st["count"]), _fmt(st.get("unfinished", 0)), _fmt(st["mean_us"]), _fmt(st["p50_us"]), _fmt(st["p99_us"]),
               _fmt(st["p999_us"]), _fmt(st["max_us"])]
        if censored:
            row.append(_fmt(st.get("censored_p99_us")))
        t.add_row(*row)
    return t


def print_summary(summary: dict, manifest: Optional[dict] = None) -> None:
    s = summary
    out_console.print(summary_table(s))
    out_console.print(
        f"flows {s['flows']:,} (completed {s['completed']:,}, unfinished {s['unfinished']:,}) · "
        f"simulated {s['sim_time_us']:,.1f} µs · offered load {s['offered_load']:.3f} · "
        f"[bold]goodput {s['goodput']:.3f}[/] of N·R (steady state {s.get('goodput_steady', float('nan')):.3f})"
    )
    load = s.get("load")
    if load:
        out_console.print(
            f"load L = {load['load']:g} on the {load['basis']} basis: mean flow {load['mean_bytes_nominal']:,.0f} B "
            f"(distribution) vs {load['mean_bytes_realised']:,.0f} B (this run) → L {load['load_nominal']:.3g} nominal, "
            f"{load['load_realised']:.3g} realised"
        )
    if s["unfinished"]:
        out_console.print(f"FCTs are of completed flows; {s['unfinished']:,} unfinished flows are counted at their elapsed "
                          f"time in the censored column (a lower bound)")
    if s.get("fabric_stats"):
        out_console.print("fabric: " + ", ".join(f"{k} {_fmt(v)}" for k, v in s["fabric_stats"].items()))
    if manifest:
        wall = manifest["wall_s"]
        speed = f" · {s['sim_time_us'] / 1e6 / wall:.3g} simulated s per wall s" if wall > 0 else ""
        out_console.print(f"events {manifest['events']:,} · wall {wall:.2f} s{speed}")
    if s.get("invariant_violations"):
        console.print(f"[red]invariant violations:[/] {s['invariant_violations'][:5]}")


def _with_check(a) -> list[str]:
    """``--set`` overrides plus ``metrics.check_invariants=true`` under ``--check``."""
    sets = list(getattr(a, "set", None) or [])
    if getattr(a, "check", False):
        sets.append("metrics.check_invariants=true")
    return sets


def cmd_run(a) -> int:
    from .api import run
    from .io import check_result_dir

    from .config import checked_in_tests, prepare

    config = Path(a.config)
    sets = _with_check(a)
    prepared = prepare(config, checked_in_tests(sets))  # checked and built once: the run below uses it
    text = prepared.toml
    _warn(config, sets)
    cfg = tomllib.loads(text)
    total = cfg.get("stop", {}).get("flows")
    out = Path(a.out) if a.out else default_run_dir(config, text)
    if not a.no_write:
        check_result_dir(out, "--out")  # before simulating: never after an hour's run
    lines = None
    if not a.quiet and not console.is_terminal:
        from .progress import RunLines, duration_us

        lines = RunLines(f"run {cfg['fabric']}", total, duration_us(cfg.get("stop", {}).get("duration")))
    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[info]}"),
                  TimeElapsedColumn(), TimeRemainingColumn(), console=console, disable=a.quiet or not console.is_terminal) as prog:
        task = prog.add_task(cfg["fabric"], total=total, info="")

        def progress(now_us, arrived, completed, events):
            prog.update(task, completed=arrived, info=f"t={now_us:,.0f} µs done={completed:,}")
            if lines:
                lines(now_us, arrived, completed, events)

        r = run(prepared, progress=progress)
    if not a.no_write:
        r.write(out, parquet=getattr(a, "parquet", False))
    print_summary(r.summary, r.manifest)
    if not a.no_write:
        console.print(f"wrote {out}/ (summary.json, flows.csv, manifest.json, config.toml{', series.csv' if r.series is not None else ''})")
    if r.summary.get("invariant_violations"):
        return 3
    return 0


def _result_key(config_toml: str) -> str:
    """What decides whether two runs' results are the same: the complete
    config, less the setting that only adds checks."""
    from .config import config_hash

    cfg = tomllib.loads(config_toml)
    cfg.get("metrics", {}).pop("check_invariants", None)
    import tomli_w

    return config_hash(tomli_w.dumps(cfg))


def default_run_dir(config: Path, complete_toml: str) -> Path:
    """``results/<config name>``, unless it holds the result of a different
    complete config (other ``--set`` values, an edited file): then
    ``results/<config name>-<key>`` beside it, so a default never overwrites
    another run's result."""
    out = Path("results") / config.stem
    try:
        old = (out / "config.toml").read_text()
    except OSError:
        return out
    try:
        same = _result_key(old) == _result_key(complete_toml)
    except tomllib.TOMLDecodeError:
        same = False
    if same:
        return out
    beside = out.with_name(f"{out.name}-{_result_key(complete_toml)[:8]}")
    console.print(f"{out} holds a run of a different config; writing this one to {beside}", highlight=False)
    return beside


def _warn(config, sets) -> None:
    from .config import warnings

    for w in warnings(config, sets):
        console.print(f"warning: {w}", markup=False, highlight=False, style="yellow")


def cmd_validate(a) -> int:
    text, _ = complete(Path(a.config), a.set)
    _warn(Path(a.config), a.set)
    out_console.print(text, markup=False, highlight=False)
    return 0


def cmd_default_config(a) -> int:
    if a.fabric:
        print(default_config_for(a.fabric))
    else:
        print(_core.default_config())
    return 0


def default_config_for(fabric: str) -> str:
    """The default config with ``fabric = "<fabric>"``, keeping only that
    fabric's table (the common keys, then its table, with doc comments)."""
    infos = {f["name"]: f for f in _core.fabrics()}
    if fabric not in infos:
        raise ConfigError(f"--fabric {fabric!r} is not known; expected one of {', '.join(infos)}")
    tables = {f["table"] for f in infos.values()}
    keep = infos[fabric]["table"]
    out, skipping = [], False
    for line in _core.default_config().splitlines():
        head = line.strip()
        if head.startswith("[") and head.endswith("]"):
            name = head.strip("[]").split(".")[0]
            skipping = name in tables and name != keep
            # The comment lines just above a table header belong to it.
            if skipping:
                while out and out[-1].startswith("#"):
                    out.pop()
        if skipping:
            continue
        if line.startswith("fabric =") or line.startswith("fabric="):
            line = f'fabric = "{fabric}"'
        out.append(line)
    return "\n".join(out).rstrip() + "\n"


def _formats(a) -> list[str]:
    """``--format png,svg``: the figure formats asked for."""
    text = getattr(a, "format", None) or "png"
    return [f.strip().lower() for f in text.split(",") if f.strip()]


def cmd_compare(a) -> int:
    from .compare import compare
    from .io import check_work_dir

    loads = None
    if a.loads is not None:
        try:
            loads = [float(x) for x in a.loads.split(",") if x.strip()]
        except ValueError:
            raise ConfigError(f"--loads {a.loads!r}: expected comma-separated numbers, e.g. 0.1,0.5,1.0") from None
        if not loads:
            raise ConfigError(f"--loads {a.loads!r}: no load given; expected comma-separated numbers, e.g. 0.1,0.5,1.0")
        dup = sorted({x for x in loads if loads.count(x) > 1})
        if dup:
            raise ConfigError(f"--loads {a.loads!r}: {', '.join(f'{x:g}' for x in dup)} given more than once (it would run twice)")
    fabrics = None
    if a.fabrics is not None:
        fabrics = [x.strip() for x in a.fabrics.split(",") if x.strip()]
        if not fabrics:
            raise ConfigError(f"--fabrics {a.fabrics!r}: no fabric given; expected comma-separated names, e.g. esn,sirius")
        dup = sorted({x for x in fabrics if fabrics.count(x) > 1})
        if dup:
            raise ConfigError(f"--fabrics {a.fabrics!r}: {', '.join(dup)} given more than once")
    if a.flows is not None and a.flows < 1:
        raise ConfigError(f"--flows {a.flows}: must be at least 1")
    check_work_dir(a.out, "--out")
    overrides = _with_check(a)
    if a.flows is not None:
        overrides.append(f"stop.flows={a.flows}")
    with Progress(TextColumn("[bold]compare"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=console, disable=not console.is_terminal) as prog:
        task = prog.add_task("points", total=None)

        from .progress import CountLines

        lines = CountLines("compare") if not console.is_terminal else None

        def on_point(done, total):
            prog.update(task, completed=done, total=total)
            if lines:
                lines(done, total)

        from . import plots

        with plots.also_write(_formats(a)):
            table = compare(a.out, scenario_path=a.scenario, loads=loads, fabrics=fabrics, overrides=overrides,
                            jobs=backend_kwargs(a)["jobs"], force=a.force, on_point=on_point)
    from .compare import scenario

    _, settings, _ = scenario(a.scenario)
    if "cases" in settings:  # collectives: its own table (compare_collectives)
        from .compare_collectives import markdown

        out_console.print(markdown(table))
        console.print(f"wrote {a.out}/table.csv, table.md, slowdown.png")
        return 0
    cls = settings.get("fct_class", "<10KB")
    from .compare import annotate

    rows = compare_rows(annotate(table), cls)
    flows = sorted({int(f) for f in table["flows"]}) if len(table) else []
    out_console.print(compare_table(rows, cls, title="photonet compare (default scenario)" if not a.scenario else f"photonet compare ({a.scenario})",
                                    flows=flows))
    basis = sorted(set(table["load_basis"].dropna())) if "load_basis" in table else []
    console.print(f"load basis: {', '.join(basis) or 'n/a'}; table.csv also has the censored FCT columns (unfinished flows "
                  f"counted at their elapsed time); goodput excludes warm-up and cool-down (metrics.steady_state)")
    console.print(f"wrote {a.out}/table.csv, table.md, report.html, fct_vs_load.png, goodput_vs_load.png"
                  + "".join(f" (and .{f})" for f in _formats(a) if f != "png"))
    return 0


def cmd_sweep(a) -> int:
    from . import sweep
    from .io import atomic_write_text, check_work_dir

    out = Path(a.out)
    grid = sweep.parse_grid(a.grid or [])
    if not grid:
        raise ConfigError("give at least one --grid key=v1,v2,...")
    points = sweep.expand(Path(a.config), grid, _with_check(a))
    check_work_dir(out, "--out")
    kw = backend_kwargs(a)
    runner = sweep.backend(kw.pop("backend"), **kw)
    if a.collect and not (out / "points").is_dir():
        raise ConfigError(f"--collect: {str(out)!r} holds no sweep points (no sweep has run there yet)")
    failures: list = []
    accept_old = a.accept_old
    stale = sweep.stale_note(out, points) if (out / "points").is_dir() else None
    if stale:
        console.print(f"{stale}: {'reusing them (--accept-old)' if accept_old else 'recomputing them (--accept-old reuses them)'}",
                      highlight=False, soft_wrap=True)
    if not a.collect:
        runs = sweep.unique(points)
        pending = sum(not sweep.is_done(out, p, accept_old) for p in runs)
        shared = f" ({len(points) - len(runs)} share a config with another)" if len(runs) < len(points) else ""
        console.print(f"{len(points)} points{shared}, {len(runs) - pending} already done, {pending} to run ({runner.name})")
        from .progress import CountLines

        lines = CountLines("sweep") if not console.is_terminal and runner.name == "local" else None
        show = console.is_terminal and runner.name == "local"
        with Progress(TextColumn("[bold]sweep"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=console, disable=not show) as prog:
            task = prog.add_task("points", total=len(runs), completed=len(runs) - pending)
            done = [len(runs) - pending]

            def on_done(*_):
                prog.advance(task)
                done[0] += 1
                if lines:
                    lines(done[0], len(runs))

            outcome = runner.run(out, points, accept_old=accept_old, on_done=on_done)
        failures = outcome.failures
        if outcome.script:
            script = outcome.script
            console.print(f"wrote {script}: submit it with `sbatch {script}`, then rerun this command with --collect")
            return 0
    finished = [p for p in points if sweep.is_done(out, p, accept_old)]
    if a.collect and not finished:
        there = sum(1 for d in (out / "points").iterdir() if not d.name.startswith("."))
        why = (f"{stale}; --accept-old collects them" if stale else
               f"the {there} result folder(s) there were made from other settings: check the config, --grid and --set")
        raise ConfigError(f"--collect: no finished point of this grid in {str(out)!r} ({why})")
    table = sweep.collect(out, finished)
    atomic_write_text(out / "table.csv", table.to_csv(index=False))
    if getattr(a, "parquet", False):
        table.to_parquet(out / "table.parquet", index=False)
    for f in failures:
        console.print(f"[red]failed:[/] {escape(str(f))}", highlight=False, soft_wrap=True)
    console.print(f"{len(table)}/{len(points)} points finished; wrote {out}/table.csv")
    if failures:
        console.print(f"{len(failures)} point(s) failed; rerun the same command to retry them (finished points are kept)")
        return 1
    return 0


def cmd_sweep_point(a) -> int:
    from . import sweep

    failures = sweep.run_task_from_file(Path(a.points), a.index)
    for f in failures:
        console.print(f"[red]failed:[/] {escape(str(f))}", highlight=False, soft_wrap=True)
    return 1 if failures else 0


def cmd_bench(a) -> int:
    from . import bench
    from .io import atomic_write_json, check_work_dir

    if a.list:
        t = Table(title="photonet bench scenarios", show_lines=False)
        t.add_column("scenario", no_wrap=True)
        t.add_column("what it runs", overflow="fold")
        for n in bench.available():
            t.add_row(n, bench.SCENARIOS[n]["about"])
        out_console.print(t)
        return 0
    if a.out:
        check_work_dir(a.out, "--out")
    names = a.scenario or bench.available()
    for n in names:
        if n not in bench.SCENARIOS:
            raise ConfigError(f"bench scenario {n!r} is not known; expected one of {', '.join(bench.SCENARIOS)}")
    results = []
    t = Table(title=f"photonet bench (whole-process, {a.repeat} runs each)")
    for c in ("scenario", "wall s (median)", "min–max", "CPU s (median)", "peak RSS MB", "sim s / wall s", "events/s"):
        t.add_column(c, justify="right" if c != "scenario" else "left")
    for n in names:
        console.print(f"[bold]{n}[/]: {bench.SCENARIOS[n]['about']}")
        r = bench.measure(n, a.repeat)
        results.append(r)
        t.add_row(n, f"{r['wall_s_median']:.2f}", f"{r['wall_s_min']:.2f}–{r['wall_s_max']:.2f}", f"{r['cpu_s_median']:.2f}", f"{r['peak_rss_mb_max']:.0f}",
                  f"{r['sim_s_per_wall_s']:.3g}", f"{r['events_per_s']:,.0f}")
    out_console.print(t)
    if a.out:
        target = Path(a.out) / "bench.json"
        atomic_write_json(target, {"photonet_version": _core.__version__, "results": results})
        console.print(f"wrote {target}")
    return 0


def cmd_reproduce(a) -> int:
    from .reproduce import run_cli

    from . import plots

    a.set = _with_check(a)
    with plots.also_write(_formats(a)):
        return run_cli(a, console, out_console, backend_kwargs(a))


def _model_args(a) -> tuple[str, Optional[str]]:
    """``photonet power|cost [MODEL] [PARAMS]``: (model name, parameter file).
    A single argument is the model if one is called so, else a parameter file
    of the default model."""
    from . import model

    names = model.model_names()
    args = [x for x in (a.model, a.params) if x is not None]
    if len(args) == 2:
        return model.resolve(args[0]), args[1]
    if len(args) == 1:
        arg = args[0]
        if arg in names:
            return arg, None
        if arg.endswith(".toml") or Path(arg).exists():
            return model.resolve(None), arg
        raise ConfigError(f"model {arg!r} is not known (nor a parameter file); expected one of {', '.join(names)}")
    return model.resolve(None), None


def _model_options(a) -> dict:
    from .config import parse_value

    opts = {}
    for item in a.option or []:
        if "=" not in item:
            raise ConfigError(f"--option {item!r}: expected key=value, e.g. error_multiplier=4")
        k, v = item.split("=", 1)
        opts[k.strip()] = parse_value(v.strip())
    if getattr(a, "multipliers", None):
        try:
            opts["power_multipliers"] = [float(m) for m in a.multipliers.split(",")]
        except ValueError:
            raise ConfigError(f"--multipliers {a.multipliers!r}: expected comma-separated numbers, e.g. 1,3,5") from None
    if getattr(a, "error_multiplier", None) is not None:
        opts["error_multiplier"] = a.error_multiplier
    return opts


def cmd_model(a) -> int:
    """``photonet power|cost [MODEL]``: the model's tables and plots (its view)."""
    from . import model

    name, params = _model_args(a)
    model.check_out(a.out)
    r = model.power_cost(params, a.set, model=name, options=_model_options(a))
    out, files = model.write(a.cmd, r, a.out)
    model.view(name).show(a.cmd, r, out_console)
    console.print(f"wrote {out}/ ({', '.join(files)})")
    return 0


BACKENDS = ("local", "ray", "slurm")


def _count(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"{n} is less than 1")
    return n


def add_backend_options(sp, *, local_only: bool = False) -> None:
    """The options that say where points run: ``--jobs`` and, unless the
    command runs locally only, ``--backend``, ``--ray-address``,
    ``--partition``, ``--time-limit``, ``--points-per-task``. Read them back
    with :func:`backend_kwargs`."""
    sp.add_argument("--jobs", type=_count, default=2, help="points run in parallel (local backend)")
    if local_only:
        return
    sp.add_argument("--backend", choices=BACKENDS, default="local", help="local threads, Ray tasks or a Slurm job array")
    sp.add_argument("--ray-address", default=None, help="Ray cluster address, e.g. auto or host:6379 (default: start a local one)")
    sp.add_argument("--partition", default=None, help="Slurm partition")
    sp.add_argument("--time-limit", default="01:00:00", help="Slurm time limit per point (an array task gets it times its points)")
    sp.add_argument("--points-per-task", type=_count, default=None,
                    help="points run one after another by each Slurm array task (default: enough to keep the array within 1,000 tasks)")


def backend_kwargs(a) -> dict:
    """The backend options of ``a`` as keyword arguments (``jobs``, ``backend``,
    ``ray_address``, ``partition``, ``time_limit``, ``points_per_task``)."""
    return {
        "jobs": a.jobs,
        "backend": getattr(a, "backend", "local"),
        "ray_address": getattr(a, "ray_address", None),
        "partition": getattr(a, "partition", None),
        "time_limit": getattr(a, "time_limit", "01:00:00"),
        "points_per_task": getattr(a, "points_per_task", None),
    }


def _hide_subcommand(sub, name: str) -> None:
    """Keeps sub-command ``name`` working but out of ``--help`` (its usage
    line, its choices list and its help row)."""
    sub._choices_actions = [c for c in sub._choices_actions if c.dest != name]
    sub.metavar = "{" + ",".join(n for n in sub.choices if n != name) + "}"


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="photonet", description="Packet-level simulator for optically switched datacenter networks.")
    p.add_argument("--version", action="version", version=f"photonet {_core.__version__}")
    p.add_argument("--debug", action="store_true", help="show the full traceback of an unexpected error")
    sub = p.add_subparsers(dest="cmd", required=True)

    # Flags shared by sub-commands, declared once (argparse `parents=`).
    def flags(add) -> argparse.ArgumentParser:
        fp = argparse.ArgumentParser(add_help=False)
        add(fp)
        return fp

    debug = flags(lambda fp: fp.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                                             help="show the full traceback of an unexpected error"))
    set_ = flags(lambda fp: fp.add_argument("--set", action="append", metavar="KEY=VALUE",
                                            help="override a config key, e.g. workload.load=0.7 (repeatable)"))
    check = flags(lambda fp: fp.add_argument("--check", action="store_true",
                                             help="check the fabric's invariants while running (metrics.check_invariants = true)"))
    backend = flags(add_backend_options)
    local = flags(lambda fp: add_backend_options(fp, local_only=True))
    _add_parser = sub.add_parser

    def add_parser(*args, parents=(), **kwargs):
        return _add_parser(*args, parents=[debug, *parents], **kwargs)

    sub.add_parser = add_parser  # type: ignore[method-assign]

    r = sub.add_parser("run", help="run one simulation from a TOML config", parents=[set_, check])
    r.add_argument("config", help="TOML config file")
    r.add_argument("--out", help="output directory (default results/<config name>)")
    r.add_argument("--no-write", action="store_true", help="print the summary only")
    r.add_argument("--parquet", action="store_true", help="also write flows.parquet (pyarrow)")
    r.add_argument("--quiet", action="store_true", help="no progress bar")
    r.set_defaults(func=cmd_run)

    v = sub.add_parser("validate", help="check a config and print it complete, with every default", parents=[set_])
    v.add_argument("config")
    v.set_defaults(func=cmd_validate)

    d = sub.add_parser("default-config", help="print the default config (every key, its doc and default)")
    d.add_argument("--fabric", help="only this fabric's table (and fabric = it), e.g. sirius")
    d.set_defaults(func=cmd_default_config)

    c = sub.add_parser("compare", help="run the default scenario (a load sweep) on every fabric; table + plots",
                       parents=[local, set_, check])
    c.add_argument("--out", default="results/compare")
    c.add_argument("--scenario", help="a scenario TOML with a [compare] table (default: the embedded one)")
    c.add_argument("--loads", help="comma-separated loads, e.g. 0.1,0.5,1.0")
    c.add_argument("--fabrics", help="comma-separated fabric names (default: all)")
    c.add_argument("--flows", type=int, help="flows per point")
    c.add_argument("--force", action="store_true", help="rerun points that already have results")
    c.add_argument("--format", help="figure formats, e.g. png,svg or png,pdf (png is always written)")
    c.set_defaults(func=cmd_compare)

    s = sub.add_parser("sweep", help="run a grid of configs (resumable; local, Ray or Slurm)", parents=[set_, backend, check])
    s.add_argument("config")
    s.add_argument("--grid", action="append", metavar="KEY=V1,V2,...", help="a swept key (repeatable; the grid is their product)")
    s.add_argument("--out", default="results/sweep")
    s.add_argument("--collect", action="store_true", help="only gather finished points into table.csv")
    s.add_argument("--parquet", action="store_true", help="also write table.parquet (pyarrow)")
    s.add_argument("--accept-old", action="store_true",
                   help="reuse points computed by another build of photonet (by default they are recomputed)")
    s.set_defaults(func=cmd_sweep)

    sp = sub.add_parser("sweep-point", help=argparse.SUPPRESS)  # used by Slurm array tasks; hidden below
    sp.add_argument("points")
    sp.add_argument("index", type=int, help="the array task: runs its points (points_per_task of them)")
    sp.set_defaults(func=cmd_sweep_point)

    b = sub.add_parser("bench", help="time fixed scenarios: wall time, peak memory, simulated s per wall s")
    b.add_argument("--scenario", action="append", help="scenario name (repeatable; default: all available)")
    b.add_argument("--repeat", type=int, default=3)
    b.add_argument("--out", default="results/bench", help="output folder: bench.json (default results/bench)")
    b.add_argument("--list", action="store_true", help="list the scenarios with what each runs, and exit")
    b.set_defaults(func=cmd_bench)

    rp = sub.add_parser("reproduce", help="run a paper's figures (experiments/<paper>/), draw them, report ours next to the paper's numbers",
                        parents=[backend, set_, check])
    rp.add_argument("paper", help="experiment name, e.g. sirius (or all)")
    rp.add_argument("--full", action="store_true", help="the paper's scale (default: the quick scale)")
    rp.add_argument("--out", help="output directory (default results/reproduce/<paper>)")
    rp.add_argument("--only", help="comma-separated figures, e.g. fig09,fig12")
    rp.add_argument("--fabrics", help="comma-separated fabrics to run (points of others are reported as skipped)")
    rp.add_argument("--format", help="figure formats, e.g. png,svg or png,pdf (png is always written)")
    rp.add_argument("--flows", action="store_true",
                    help="every point keeps its per-flow records (points/<key>/flows.parquet); by default only the points "
                         "a figure reads them from (cdf and scatter panels, a reference, per-flow metrics) do")
    rp.set_defaults(func=cmd_reproduce)

    models = [m["name"] for m in _core.models()]  # not photonet.model: keeps start-up free of pandas
    for name, what in (("power", "power"), ("cost", "cost")):
        m = sub.add_parser(name, help=f"analytical {what} model by name ({', '.join(models) or 'none built'}): tables + plots",
                           parents=[set_])
        m.add_argument("model", nargs="?", help=f"the model, one of {', '.join(models)} (default {models[0] if models else '-'})")
        m.add_argument("params", nargs="?", help="a TOML file of the model's parameters (default: its paper's values)")
        m.add_argument("--option", action="append", metavar="KEY=VALUE", help="a model option, e.g. error_multiplier=4 (repeatable)")
        m.add_argument("--out", default=f"results/{name}", help=f"output directory (default results/{name})")
        if name == "power":
            m.add_argument("--multipliers", help="comma-separated tunable-laser power multipliers (option power_multipliers; sirius default 1,2,3,4,5,6)")
        else:
            m.add_argument("--error-multiplier", type=float, default=None, help="tunable-laser cost multiplier of the error bars (option error_multiplier; sirius default 5)")
        m.set_defaults(func=cmd_model)
    _hide_subcommand(sub, "sweep-point")
    return p


def main(argv: Optional[Sequence[str]] = None) -> None:
    parser = build_parser()
    a = parser.parse_args(argv)
    debug = getattr(a, "debug", False)
    try:
        code = a.func(a)
    except ConfigError as e:
        if debug:
            raise
        console.print(f"[red]error:[/] {escape(str(e))}", highlight=False, soft_wrap=True)
        code = 2
    except SimulationError as e:
        if debug:
            raise
        console.print(f"[red]simulation error:[/] {escape(str(e))}", highlight=False, soft_wrap=True)
        code = 4
    except KeyboardInterrupt:
        if debug:
            raise
        console.print("[yellow]interrupted[/]: nothing half-written was left behind")
        code = 130
    except OSError as e:
        if debug:
            raise
        where = f"{e.filename}: " if e.filename else ""
        console.print(f"[red]error:[/] {escape(where + (e.strerror or str(e)))}", highlight=False, soft_wrap=True)
        code = 1
    except Exception as e:  # noqa: BLE001 - no traceback reaches a user who did not ask for one
        if debug:
            raise
        console.print(f"[red]error:[/] {escape(type(e).__name__ + ': ' + str(e))} (a bug in photonet: rerun with --debug for the "
                      f"traceback and report it)", highlight=False, soft_wrap=True)
        code = 1
    except BaseException as e:  # a Rust panic surfaces as pyo3's PanicException (a BaseException)
        if debug or isinstance(e, (SystemExit, GeneratorExit)):
            raise
        console.print(f"[red]error:[/] {escape(type(e).__name__ + ': ' + str(e))} (a bug in photonet: rerun with --debug for the "
                      f"traceback and report it)", highlight=False, soft_wrap=True)
        code = 1
    sys.exit(code)


if __name__ == "__main__":
    main()
