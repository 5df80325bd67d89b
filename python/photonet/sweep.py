"""Sweeps: a grid of overrides over a base config, run locally, on Ray, or as a
Slurm job array. Each point is a pure function of (config, seed, input files)
and is stored under ``<out>/points/<key>/``, the key hashing the complete config
and the contents of every file it reads; points whose results exist are
skipped, so a killed sweep resumes where it stopped. A result made by another
build of photonet (another version or compiled core: see
:mod:`photonet.provenance`) is not reused unless asked (``accept_old``)."""
from __future__ import annotations

import hashlib
import itertools
import json
import re
import shlex
import tempfile
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Mapping, Optional, Sequence

import pandas as pd

from .config import (ConfigError, ConfigLike, Prepared, apply_overrides, config_hash, load, parse_value, plain,
                     prepare_unchecked, split_setting, workload_search_path)
from .io import FLOW_FILES, atomic_write_json, atomic_write_text, remove_stale_temporaries
from .provenance import describe_build, file_digests, input_digests, same_build


@dataclass
class Point:
    """One sweep point: the overrides that define it and its complete config."""

    params: dict
    config_toml: str
    base_dir: Optional[str]
    key: str
    # The files the config reads: {config key: {"path", "sha256"}}.
    inputs: dict = field(default_factory=dict)
    # The run, checked and built in the core when the point was made; its run
    # uses it, so the fabric is built once. Never stored or sent (Ray, Slurm):
    # elsewhere the point is prepared again from `config_toml`.
    prepared: Optional[Prepared] = field(default=None, repr=False, compare=False)
    # The per-flow records its result holds: "csv" (flows.csv, as `photonet
    # run` writes), "parquet" (flows.parquet only) or None (none: summary
    # only). Not in the key: a result with either file serves a point that
    # needs records; one without is run again when a point needs them.
    flows: Optional[str] = "csv"

    def stored(self) -> dict:
        """The point's fields as ``points.json`` holds them."""
        return {k: v for k, v in self.__dict__.items() if k != "prepared"}

    def portable(self) -> "Point":
        """This point without its prepared run (for another process)."""
        return Point(**self.stored())

    def take_prepared(self) -> Optional[Prepared]:
        """The prepared run, once (it runs once); None after that."""
        prepared, self.prepared = self.prepared, None
        return prepared


def point_key(key_toml: str, inputs: dict) -> str:
    """A point's results key: the hash of its complete config and, when it
    reads files, of their contents (an edited CDF or trace gives a new key)."""
    if not inputs:
        return config_hash(key_toml)
    digests = json.dumps({k: v["sha256"] for k, v in sorted(inputs.items())})
    return hashlib.sha256(f"{config_hash(key_toml)}\n{digests}".encode()).hexdigest()[:16]


def make_point(params: dict, config_toml: str, base_dir: Optional[str | Path], key_toml: Optional[str] = None) -> Point:
    """A point of ``config_toml`` (complete); ``key_toml`` is what its key
    hashes, if not the config itself."""
    base = str(base_dir) if base_dir else None
    inputs = input_digests(config_toml, base, workload_search_path())
    return Point(params, config_toml, base, point_key(config_toml if key_toml is None else key_toml, inputs), inputs)


def prepared_point(params: dict, cfg: ConfigLike, base_dir: Optional[str | Path],
                   key_of: Callable[[str], str] = lambda text: text) -> Point:
    """The point of config ``cfg`` (a dict), checked and built in the core
    once: the point keeps the prepared run, and running it builds nothing
    again. ``key_of(complete_toml)`` is what its key hashes. Raises
    ConfigError."""
    text, prepared = prepare_unchecked(cfg, base_dir=base_dir)
    base = str(prepared.base) if prepared.base else (str(base_dir) if base_dir else None)
    inputs = file_digests(prepared.input_files)
    return Point(params, text, base, point_key(key_of(text), inputs), inputs, prepared)


def split_values(text: str) -> list[str]:
    """Splits ``v1,v2,...`` at the commas outside quotes and brackets:
    ``'"a,b",[1,2],3'`` -> ``['"a,b"', '[1,2]', '3']``."""
    parts, cur, quote, depth = [], [], None, 0
    i = 0
    while i < len(text):
        ch = text[i]
        if quote:
            cur.append(ch)
            if ch == "\\" and quote == '"' and i + 1 < len(text):
                cur.append(text[i + 1])
                i += 1
            elif ch == quote:
                quote = None
        elif ch in "\"'":
            quote = ch
            cur.append(ch)
        elif ch in "[{":
            depth += 1
            cur.append(ch)
        elif ch in "]}":
            depth -= 1
            if depth < 0:
                raise ConfigError(f"{text!r}: unbalanced brackets")
            cur.append(ch)
        elif ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
        i += 1
    if quote:
        raise ConfigError(f"{text!r}: the quote {quote} is never closed")
    if depth:
        raise ConfigError(f"{text!r}: unbalanced brackets")
    parts.append("".join(cur))
    return parts


def _same_value(a, b) -> bool:
    """Equal as config values: ``0.1`` and ``1e-1`` are, ``1`` and ``true`` are not."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return a == b


def parse_grid(items: Sequence[str]) -> dict[str, list]:
    """``["workload.load=0.1,0.5", "fabric=esn,sirius"]`` -> {key: [values]}.
    Values are split at commas outside quotes and brackets (``name="a,b"`` is one
    value). A key given twice, or a value repeated within a key (``0.1,1e-1``),
    is a ConfigError: it would run one point twice."""
    grid: dict[str, list] = {}
    for item in items:
        k, vs = split_setting(item, "--grid", "key=v1,v2,...")
        if k in grid:
            raise ConfigError(f"--grid {k}: the key is given more than once; put all its values in one --grid {k}=v1,v2,...")
        try:
            raw = [v.strip() for v in split_values(vs)]
        except ConfigError as e:
            raise ConfigError(f"--grid {k}: {e}") from None
        values: list = []
        texts: list[str] = []
        for t in raw:
            if not t:
                continue
            v = parse_value(t)
            for seen, st in zip(values, texts):
                if _same_value(seen, v):
                    raise ConfigError(f"--grid {k}: the value {t} repeats {st} (the same value given twice would run one point twice)")
            values.append(v)
            texts.append(t)
        if not values:
            raise ConfigError(f"--grid {item!r}: no values")
        grid[k] = values
    return grid


def expand(config: ConfigLike | None, grid: dict[str, list], overrides=None, base_dir: str | Path | None = None) -> list[Point]:
    """All points of the grid; every point is validated before anything runs.
    Relative file names resolve next to the config file (or in ``base_dir``
    when ``config`` is not a file), then in the workload search path. Two
    points may share a key (the same complete config, e.g. a key that the
    selected fabric ignores); the backends run each key once."""
    base_cfg, file_dir = load(config, overrides)
    base_dir = file_dir if file_dir is not None else base_dir
    keys = list(grid)
    points = []
    for combo in itertools.product(*(grid[k] for k in keys)):
        params = plain(dict(zip(keys, combo)))
        cfg = plain(base_cfg)
        apply_overrides(cfg, params)
        try:
            points.append(prepared_point(params, cfg, base_dir))
        except ConfigError as e:
            raise ConfigError(f"sweep point {params}: {e}") from None
    return release_shared(points)


def release_shared(points: list[Point]) -> list[Point]:
    """``points``, with the prepared run dropped from each point whose key an
    earlier one has (only the first of a key runs): built fabrics are freed
    as early as possible."""
    seen: set[str] = set()
    for p in points:
        if p.key in seen:
            p.prepared = None
        seen.add(p.key)
    return points


def unique(points: Iterable[Point]) -> list[Point]:
    """The points with distinct keys, first of each, in order."""
    seen: dict[str, Point] = {}
    for p in points:
        seen.setdefault(p.key, p)
    return list(seen.values())


def point_dir(out: Path, p: Point) -> Path:
    return out / "points" / p.key


def _manifest(out: Path, p: Point) -> dict:
    try:
        return json.loads((point_dir(out, p) / "manifest.json").read_text())
    except (OSError, ValueError):
        return {}


def point_state(out: Path, p: Point) -> str:
    """``missing`` (no result, or one without the per-flow records the point
    needs), ``done`` (a result made by this build), or ``stale`` (a result
    made by another build of photonet)."""
    d = point_dir(out, p)
    if not (d / "summary.json").exists():
        return "missing"
    if p.flows is not None and not any((d / f).exists() for f in FLOW_FILES):
        return "missing"
    return "done" if same_build(_manifest(out, p)) else "stale"


def is_done(out: Path, p: Point, accept_old: bool = False) -> bool:
    """Whether ``p`` has a result to reuse: one made by this build, or by any
    build with ``accept_old``."""
    state = point_state(out, p)
    return state == "done" or (accept_old and state == "stale")


def stale_note(out: Path, points: Iterable[Point]) -> Optional[str]:
    """A line saying how many results were made by another build (and which),
    or None if there are none."""
    stale = [p for p in unique(points) if point_state(out, p) == "stale"]
    if not stale:
        return None
    builds = sorted({describe_build(_manifest(out, p)) for p in stale})
    return (f"{len(stale)} point(s) in {out} were computed by another build of photonet ({'; '.join(builds[:3])}"
            f"{'; …' if len(builds) > 3 else ''}), not this one")


def prepare(out: Path) -> None:
    """Makes ``out/points`` and removes temporaries that killed writers left
    there (see :func:`photonet.io.remove_stale_temporaries`)."""
    (out / "points").mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(out / "points")
    remove_stale_temporaries(out)


def run_point(out: Path, p: Point, progress=None) -> dict:
    """Runs one point and writes its result directory, ``params.json``
    included, in one atomic step."""
    from .api import run  # late import: keeps worker start-up light

    prepared = p.take_prepared()
    r = run(prepared if prepared is not None else p.config_toml, progress=progress, base_dir=p.base_dir)
    if r.cancelled:
        # A cancelled run is not this point's result: write nothing, so that a
        # resumed sweep runs it again.
        raise KeyboardInterrupt(f"point {p.key} cancelled")
    r.manifest["sweep_params"] = p.params
    r.write(point_dir(out, p), extra={"params.json": p.params}, flows_csv=p.flows == "csv", parquet=p.flows == "parquet")
    return r.summary


@dataclass
class Failure:
    """A point that raised: its params and the error, one line."""

    point: Point
    error: str

    def __str__(self) -> str:
        return f"point {self.point.key} {self.point.params}: {self.error}"


def _describe(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}"


class _Cancelled(Exception):
    """Raised by a running point's progress callback once the sweep is interrupted."""


# Called as a point finishes: the point, its wall seconds and its summary
# (both None where the backend cannot tell: Ray).
OnDone = Callable[[Point, Optional[float], Optional[dict]], None]


@dataclass
class Outcome:
    """What a backend did with the pending points: the ones that failed and,
    for a Slurm job array, the script written (its points left pending)."""

    failures: list[Failure] = field(default_factory=list)
    script: Optional[Path] = None
    pending: list[Point] = field(default_factory=list)


def pending_points(out: Path, points: Iterable[Point], accept_old: bool = False) -> list[Point]:
    """The points to run: each key once, those without a result of this build
    (or of any build with ``accept_old``). The others' prepared runs are
    dropped (their fabrics freed)."""
    pending = []
    for p in unique(points):
        if is_done(out, p, accept_old):
            p.prepared = None
        else:
            pending.append(p)
    return pending


class Local:
    """Points run in ``jobs`` threads of this process (the core releases the
    GIL). Interrupting (Ctrl-C) cancels the running simulations: they write
    nothing, so a resumed sweep runs them again."""

    name = "local"

    def __init__(self, jobs: int = 1):
        self.jobs = jobs

    def run(self, out: Path, points: list[Point], *, accept_old: bool = False, on_done: Optional[OnDone] = None,
            on_failed: Optional[Callable[[Failure], None]] = None) -> Outcome:
        prepare(out)
        pending = pending_points(out, points, accept_old)
        outcome = Outcome()
        cancel = threading.Event()

        def cb(*_):
            if cancel.is_set():
                raise _Cancelled()
            return True

        def one(p: Point) -> tuple[Point, Optional[str], Optional[dict], float]:
            """(point, error or None, summary, wall seconds)."""
            t0 = time.time()
            try:
                summary = run_point(out, p, progress=cb)
                return p, None, summary, time.time() - t0
            except _Cancelled:
                return p, "cancelled", None, time.time() - t0
            except Exception as e:  # noqa: BLE001 - one bad point must not lose the others
                return p, _describe(e), None, time.time() - t0
            except BaseException as e:  # a Rust panic surfaces as pyo3's PanicException
                if isinstance(e, (KeyboardInterrupt, SystemExit)):
                    raise
                return p, _describe(e), None, time.time() - t0

        def settle(p: Point, error: Optional[str], summary: Optional[dict], secs: float) -> None:
            if error == "cancelled":
                return
            if error is not None:
                f = Failure(p, error)
                outcome.failures.append(f)
                if on_failed:
                    on_failed(f)
            elif on_done:
                on_done(p, secs, summary)

        if self.jobs <= 1:
            for p in pending:
                settle(*one(p))
            return outcome
        ex = ThreadPoolExecutor(max_workers=self.jobs)
        try:
            for fut in as_completed([ex.submit(one, p) for p in pending]):
                settle(*fut.result())
        except BaseException:
            cancel.set()
            ex.shutdown(wait=True, cancel_futures=True)
            raise
        ex.shutdown(wait=True)
        return outcome


def _ray_task(out: str, p: Point) -> Optional[str]:
    """One point on a Ray worker: None if done, else the error (one line)."""
    try:
        run_point(Path(out), p)
    except Exception as e:  # noqa: BLE001 - reported per point by the driver
        return _describe(e)
    return None


class Ray:
    """Points run as Ray tasks; results land in ``out`` on a shared
    filesystem, exactly as with the local backend. ``address``: a cluster's
    address (``auto`` or host:port); None starts a local one."""

    name = "ray"

    def __init__(self, address: Optional[str] = None):
        self.address = address

    def run(self, out: Path, points: list[Point], *, accept_old: bool = False, on_done: Optional[OnDone] = None,
            on_failed: Optional[Callable[[Failure], None]] = None) -> Outcome:
        try:
            import ray  # noqa: PLC0415
        except ImportError:
            raise ConfigError("the ray backend needs Ray: pip install 'ray>=2.9' (or use --backend local|slurm)") from None
        prepare(out)
        pending = pending_points(out, points, accept_old)
        outcome = Outcome()
        if not pending:
            return outcome
        address = self.address
        started_here = not ray.is_initialized()
        try:
            ray.init(address=address, ignore_reinit_error=True, log_to_driver=False,
                     **({} if address else {"include_dashboard": False}))
        except (ConnectionError, RuntimeError, ValueError) as e:
            raise ConfigError(f"--ray-address {address!r}: cannot connect to a Ray cluster: {e}") from None
        try:
            task = ray.remote(num_cpus=1, max_retries=0)(_ray_task)
            refs = {task.remote(str(Path(out).resolve()), p.portable()): p for p in pending}
            waiting = list(refs)
            while waiting:
                ready, waiting = ray.wait(waiting, num_returns=1)
                for ref in ready:
                    p = refs[ref]
                    try:
                        err = ray.get(ref)
                    except Exception as e:  # noqa: BLE001 - a worker that died, a task Ray could not run
                        err = _describe(e).splitlines()[0]
                    if err is None and is_done(out, p):
                        if on_done:
                            on_done(p, None, None)
                    else:
                        f = Failure(p, err or "no result written (is --out on a filesystem the workers share?)")
                        outcome.failures.append(f)
                        if on_failed:
                            on_failed(f)
        finally:
            if started_here:
                ray.shutdown()
        return outcome


class Slurm:
    """Points written as a Slurm job array (:func:`write_slurm`), to submit
    with ``sbatch``; nothing runs here. Without pending points no script is
    written."""

    name = "slurm"

    def __init__(self, partition: Optional[str] = None, time_limit: str = "01:00:00",
                 points_per_task: Optional[int] = None):
        slurm_seconds(time_limit)
        self.partition, self.time_limit, self.points_per_task = partition, time_limit, points_per_task

    def run(self, out: Path, points: list[Point], *, accept_old: bool = False, on_done: Optional[OnDone] = None,
            on_failed: Optional[Callable[[Failure], None]] = None) -> Outcome:
        pending = pending_points(out, points, accept_old)
        if not pending:
            return Outcome()
        script = write_slurm(out, points, partition=self.partition, time_limit=self.time_limit,
                             points_per_task=self.points_per_task, accept_old=accept_old)
        return Outcome(script=script, pending=pending)


BACKENDS = ("local", "ray", "slurm")


def backend(name: str = "local", *, jobs: int = 1, ray_address: Optional[str] = None, partition: Optional[str] = None,
            time_limit: str = "01:00:00", points_per_task: Optional[int] = None):
    """The backend ``name`` (local, ray or slurm) with its options (each uses
    its own and ignores the others'): an object whose ``run(out, points,
    accept_old=, on_done=, on_failed=)`` runs the pending points, each key
    once, a failing point not stopping the others, and returns an
    :class:`Outcome`."""
    if name == "local":
        return Local(jobs)
    if name == "ray":
        return Ray(ray_address)
    if name == "slurm":
        return Slurm(partition, time_limit, points_per_task)
    raise ConfigError(f"backend {name!r} is not known; expected {', '.join(BACKENDS)}")


def run_local(out: Path, points: list[Point], jobs: int = 1, on_done: Callable[[Point], None] | None = None,
              accept_old: bool = False) -> list[Failure]:
    """Runs pending points (each key once; a result of another build is
    recomputed unless ``accept_old``) with ``jobs`` threads (the core releases
    the GIL). A point that fails does not stop the others; returns the
    failures."""
    done = (lambda p, *_: on_done(p)) if on_done else None
    return Local(jobs).run(out, points, accept_old=accept_old, on_done=done).failures


def run_ray(out: Path, points: list[Point], address: Optional[str] = None,
            on_done: Callable[[Point], None] | None = None, accept_old: bool = False) -> list[Failure]:
    """Runs pending points (each key once) as Ray tasks (:class:`Ray`); a
    point that fails does not stop the others; returns the failures."""
    done = (lambda p, *_: on_done(p)) if on_done else None
    return Ray(address).run(out, points, accept_old=accept_old, on_done=done).failures


_SLURM_TIME = re.compile(r"^(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?$")


def slurm_seconds(limit: str) -> int:
    """Seconds of a Slurm time limit: ``MM``, ``MM:SS``, ``HH:MM:SS``, ``D-HH``,
    ``D-HH:MM``, ``D-HH:MM:SS``. ConfigError otherwise."""
    m = _SLURM_TIME.match(str(limit).strip())
    if not m:
        raise ConfigError(f"--time-limit {limit!r}: expected a Slurm time, e.g. 01:00:00, 30, 2-00:00:00")
    d, a, b, c = m.groups()
    if d is not None:  # D-HH[:MM[:SS]]
        secs = int(d) * 86400 + int(a) * 3600 + int(b or 0) * 60 + int(c or 0)
    elif c is not None:  # HH:MM:SS
        secs = int(a) * 3600 + int(b) * 60 + int(c)
    elif b is not None:  # MM:SS
        secs = int(a) * 60 + int(b)
    else:  # MM
        secs = int(a) * 60
    if secs <= 0:
        raise ConfigError(f"--time-limit {limit!r}: must be more than 0")
    return secs


def slurm_time(secs: int) -> str:
    d, r = divmod(secs, 86400)
    return f"{d}-{r // 3600:02d}:{r % 3600 // 60:02d}:{r % 60:02d}" if d else f"{r // 3600:02d}:{r % 3600 // 60:02d}:{r % 60:02d}"


MAX_ARRAY_TASKS = 1000  # Slurm's default MaxArraySize is 1001


def write_slurm(out: Path, points: list[Point], partition: Optional[str] = None, time_limit: str = "01:00:00",
                points_per_task: Optional[int] = None, accept_old: bool = False) -> Path:
    """Writes ``points.json`` and ``sweep.sbatch``: a job array whose tasks run
    ``points_per_task`` points each, one after another (default: as few as keep
    the array within 1,000 tasks); the task's time limit is ``time_limit`` per
    point times that. Submit with ``sbatch <out>/sweep.sbatch``, then ``photonet
    sweep ... --collect`` builds the table. Points already done are left out,
    and skipped by the tasks if done meanwhile."""
    secs = slurm_seconds(time_limit)
    out = Path(out).resolve()
    prepare(out)
    todo = [p for p in unique(points) if not is_done(out, p, accept_old)]
    if points_per_task is None:
        points_per_task = max(1, -(-len(todo) // MAX_ARRAY_TASKS))
    if points_per_task < 1:
        raise ConfigError(f"--points-per-task {points_per_task}: must be at least 1")
    tasks = max(1, -(-len(todo) // points_per_task))
    atomic_write_json(out / "points.json", {"points_per_task": points_per_task, "accept_old": accept_old,
                                            "points": [p.stored() for p in todo]})
    lines = [
        "#!/bin/bash",
        f"#SBATCH --job-name=photonet-{out.name}"[:80],
        f"#SBATCH --array=0-{tasks - 1}",
        f"#SBATCH --time={slurm_time(secs * points_per_task)}",
        "#SBATCH --cpus-per-task=1",
        f"#SBATCH --output={out}/slurm-%A_%a.log",
    ]
    if partition:
        lines.append(f"#SBATCH --partition={partition}")
    lines.append(f"# {len(todo)} points, {points_per_task} per array task")
    lines.append(f"exec {shlex.quote(sys.executable)} -m photonet.cli sweep-point {shlex.quote(str(out / 'points.json'))} "
                 f"\"$SLURM_ARRAY_TASK_ID\"")
    script = out / "sweep.sbatch"
    atomic_write_text(script, "\n".join(lines) + "\n")
    return script


def read_points_file(points_file: Path) -> tuple[list[Point], int, bool]:
    """(points, points per task, accept_old) of a ``points.json`` written by
    :func:`write_slurm`."""
    try:
        data = json.loads(Path(points_file).read_text())
    except (OSError, ValueError) as e:
        raise ConfigError(f"{points_file}: cannot read the sweep's points: {e}") from None
    try:
        if isinstance(data, list):  # written by an older photonet: one point per task
            return [Point(**d) for d in data], 1, False
        return [Point(**d) for d in data["points"]], int(data["points_per_task"]), bool(data.get("accept_old", False))
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise ConfigError(f"{points_file}: not a sweep's points file as `photonet sweep --backend slurm` writes it "
                          f"({type(e).__name__}: {e})") from None


def run_task_from_file(points_file: Path, task: int) -> list[Failure]:
    """Runs the points of array task ``task`` (those not done yet), one after
    another; a failing point does not stop the others. Returns the failures."""
    pts, per, accept_old = read_points_file(points_file)
    out = Path(points_file).parent
    mine = pts[task * per:(task + 1) * per]
    if not mine and (pts or task != 0):
        raise ConfigError(f"array task {task}: {points_file} has {len(pts)} points, {per} per task, so tasks 0-{max(0, -(-len(pts) // per) - 1)}")
    failures = []
    for p in mine:
        if is_done(out, p, accept_old):
            continue
        try:
            run_point(out, p)
        except Exception as e:  # noqa: BLE001 - one bad point must not lose the others
            failures.append(Failure(p, _describe(e)))
    return failures


def run_point_from_file(points_file: Path, index: int) -> None:
    """Runs the points of array task ``index`` (see :func:`run_task_from_file`);
    raises RuntimeError if any failed."""
    failures = run_task_from_file(points_file, index)
    if failures:
        raise RuntimeError("; ".join(map(str, failures)))


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
    """Table of every finished point (params + flattened summary), one row per
    point given (the params are the point's own, even where two points share a
    result), or per result folder under ``out/points`` if none are given."""
    rows = []
    if points is not None:
        items = [(point_dir(out, p), p.params) for p in points]
    else:
        items = [(d, None) for d in sorted((out / "points").glob("*")) if not d.name.startswith(".")]
    for d, params in items:
        s = d / "summary.json"
        if not s.exists():
            continue
        if params is None:
            params = json.loads((d / "params.json").read_text()) if (d / "params.json").exists() else {}
        row = {**params, **flatten_summary(json.loads(s.read_text())), "key": d.name}
        rows.append(row)
    return pd.DataFrame(rows)


def run_grid(
    config: ConfigLike,
    grid: Mapping[str, Sequence],
    *,
    jobs: int = 2,
    out: str | Path | None = None,
    overrides=None,
) -> pd.DataFrame:
    """Runs every point of ``grid`` (key -> values; the grid is their
    product) on ``config`` and returns one row per point: the swept values,
    then the flattened summary (goodput, FCT statistics per size class with
    the censored p99 beside the completed-only one, fabric statistics).

    ``jobs``: points run in parallel (threads; the core releases the GIL).
    ``out``: keep the points' results there (a later call skips points already
    done, like ``photonet sweep``); default: a temporary folder, removed after.
    ``photonet.sweep(config, grid, ...)`` calls this. Raises :class:`photonet.ConfigError` for bad input and ``RuntimeError``
    naming the failed points."""
    if not grid:
        raise ConfigError("sweep: give at least one grid key, e.g. {'workload.load': [0.2, 0.5]}")
    g = {k: list(v) if isinstance(v, (list, tuple)) else [v] for k, v in grid.items()}
    points = expand(config, g, overrides)
    with tempfile.TemporaryDirectory(prefix="photonet-sweep-") as tmp:
        folder = Path(out) if out is not None else Path(tmp)
        failures = run_local(folder, points, jobs=jobs)
        if failures:
            raise RuntimeError(f"{len(failures)} sweep point(s) failed: " + "; ".join(map(str, failures)))
        return collect(folder, points)


class _CallableModule(type(sys.modules[__name__])):
    """``photonet.sweep(config, grid, jobs=...)`` runs a sweep into a
    DataFrame (:func:`run_grid`) while ``photonet.sweep``
    stays this module."""

    def __call__(self, config, grid, **kwargs):
        return run_grid(config, grid, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
