"""Sweeps: a grid of overrides over a base config, run locally, on Ray, or as a
Slurm job array. Each point is a pure function of (config, seed) and is stored
under ``<out>/points/<config-hash>/``; points whose results exist are skipped,
so a killed sweep resumes where it stopped."""
from __future__ import annotations

import itertools
import json
import shlex
import sys
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Optional, Sequence

import pandas as pd

from .config import ConfigError, ConfigLike, apply_overrides, complete, config_hash, load, parse_value
from .io import atomic_write_json, atomic_write_text


@dataclass
class Point:
    """One sweep point: the overrides that define it and its complete config."""

    params: dict
    config_toml: str
    base_dir: Optional[str]
    key: str


def parse_grid(items: Sequence[str]) -> dict[str, list]:
    """``["workload.load=0.1,0.5", "fabric=esn,sirius"]`` -> {key: [values]}."""
    grid: dict[str, list] = {}
    for item in items:
        if "=" not in item:
            raise ConfigError(f"--grid {item!r}: expected key=v1,v2,...")
        k, vs = item.split("=", 1)
        values = [parse_value(v.strip()) for v in vs.split(",") if v.strip()]
        if not values:
            raise ConfigError(f"--grid {item!r}: no values")
        grid[k.strip()] = values
    return grid


def expand(config: ConfigLike | None, grid: dict[str, list], overrides=None) -> list[Point]:
    """All points of the grid; every point is validated before anything runs."""
    base_cfg, base_dir = load(config, overrides)
    keys = list(grid)
    points = []
    for combo in itertools.product(*(grid[k] for k in keys)):
        params = dict(zip(keys, combo))
        cfg = json.loads(json.dumps(base_cfg))
        apply_overrides(cfg, params)
        try:
            text, _ = complete(cfg)
        except ConfigError as e:
            raise ConfigError(f"sweep point {params}: {e}") from None
        points.append(Point(params, text, str(base_dir) if base_dir else None, config_hash(text)))
    return points


def point_dir(out: Path, p: Point) -> Path:
    return out / "points" / p.key


def is_done(out: Path, p: Point) -> bool:
    return (point_dir(out, p) / "summary.json").exists()


def run_point(out: Path, p: Point, progress=None) -> dict:
    """Runs one point and writes its result directory atomically."""
    from .api import run  # late import: keeps worker start-up light

    r = run(p.config_toml, progress=progress, base_dir=p.base_dir)
    if r.cancelled:
        # A cancelled run is not this point's result: write nothing, so that a
        # resumed sweep runs it again.
        raise KeyboardInterrupt(f"point {p.key} cancelled")
    r.manifest["sweep_params"] = p.params
    r.write(point_dir(out, p))
    atomic_write_json(point_dir(out, p) / "params.json", p.params)
    return r.summary


def run_local(out: Path, points: list[Point], jobs: int = 1, on_done: Callable[[Point], None] | None = None) -> None:
    """Runs pending points with ``jobs`` threads (the core releases the GIL)."""
    pending = [p for p in points if not is_done(out, p)]
    if jobs <= 1:
        for p in pending:
            run_point(out, p)
            if on_done:
                on_done(p)
        return
    with ThreadPoolExecutor(max_workers=jobs) as ex:
        futs = {ex.submit(run_point, out, p): p for p in pending}
        for f in as_completed(futs):
            f.result()
            if on_done:
                on_done(futs[f])


def run_ray(out: Path, points: list[Point], address: Optional[str] = None) -> None:
    """Runs pending points as Ray tasks (``pip install ray``); results land in
    ``out`` on a shared filesystem, exactly as with the local backend."""
    try:
        import ray  # noqa: PLC0415
    except ImportError:
        raise SystemExit("the ray backend needs Ray: pip install 'ray>=2.9' (or use --backend local|slurm)") from None
    ray.init(address=address, ignore_reinit_error=True)
    @ray.remote
    def task(o: str, p: Point) -> str:
        run_point(Path(o), p)
        return p.key

    pending = [p for p in points if not is_done(out, p)]
    ray.get([task.remote(str(out), p) for p in pending])


def write_slurm(out: Path, points: list[Point], partition: Optional[str] = None, time_limit: str = "01:00:00") -> Path:
    """Writes ``points.json`` and ``sweep.sbatch`` (a job array, one task per
    point); submit with ``sbatch <out>/sweep.sbatch``, then ``photonet sweep
    ... --collect`` to build the table. Finished points are skipped by the tasks."""
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_json(out / "points.json", [p.__dict__ for p in points])
    lines = [
        "#!/bin/bash",
        f"#SBATCH --array=0-{len(points) - 1}",
        f"#SBATCH --time={time_limit}",
        "#SBATCH --cpus-per-task=1",
        f"#SBATCH --output={out}/slurm-%A_%a.log",
    ]
    if partition:
        lines.append(f"#SBATCH --partition={partition}")
    lines.append(f"{shlex.quote(sys.executable)} -m photonet.cli sweep-point {shlex.quote(str(out / 'points.json'))} $SLURM_ARRAY_TASK_ID")
    script = out / "sweep.sbatch"
    atomic_write_text(script, "\n".join(lines) + "\n")
    return script


def run_point_from_file(points_file: Path, index: int) -> None:
    pts = [Point(**d) for d in json.loads(Path(points_file).read_text())]
    out = Path(points_file).parent
    p = pts[index]
    if not is_done(out, p):
        run_point(out, p)


def flatten_summary(summary: dict) -> dict:
    """One table row from a summary: goodput, load, FCT stats per class."""
    row = {
        "fabric_name": summary["fabric"],
        "flows": summary["flows"],
        "completed": summary["completed"],
        "unfinished": summary.get("unfinished"),
        "offered_load": summary["offered_load"],
        "goodput": summary["goodput"],
        "goodput_steady": summary.get("goodput_steady"),
        "sim_time_us": summary["sim_time_us"],
        "events": summary["events"],
    }
    load = summary.get("load")
    if load:
        row["load_basis"] = load["basis"]
        row["load_nominal"] = load["load_nominal"]
        row["load_realised"] = load["load_realised"]
    for cls, st in summary["fct"].items():
        for k in ("p50_us", "p99_us", "mean_us", "unfinished", "censored_p99_us"):
            if k in st:
                row[f"fct{cls}_{k}"] = st[k]
    for k, v in summary.get("fabric_stats", {}).items():
        row[f"stat_{k}"] = v
    return row


def collect(out: Path, points: Iterable[Point] | None = None) -> pd.DataFrame:
    """Table of every finished point (params + flattened summary)."""
    rows = []
    dirs = [point_dir(out, p) for p in points] if points is not None else sorted((out / "points").glob("*"))
    for d in dirs:
        s = d / "summary.json"
        if not s.exists():
            continue
        params = json.loads((d / "params.json").read_text()) if (d / "params.json").exists() else {}
        row = {**params, **flatten_summary(json.loads(s.read_text())), "key": d.name}
        rows.append(row)
    return pd.DataFrame(rows)
