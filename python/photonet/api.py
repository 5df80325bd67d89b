"""The Python API: ``photonet.run(config) -> Result``. The CLI is built on it."""
from __future__ import annotations

import json
import platform
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, Optional

from . import _core
from .config import ConfigError, ConfigLike, Prepared, checked_in_tests, prepare, tomllib
from .provenance import build_info, file_digests
from .io import atomic_dir, atomic_write_csv, atomic_write_json, atomic_write_parquet, atomic_write_text, write_frame_csv

if TYPE_CHECKING:  # imported where used: `run` and `bench` need neither
    import numpy as np
    import pandas as pd

ProgressFn = Callable[[float, int, int, int], Optional[bool]]

# The per-flow columns as they leave the Rust core (`_core.run`), numpy arrays
# that own the core's buffers (no copy): name -> dtype.
FLOW_COLUMNS = {
    "id": "uint32",
    "src": "uint32",
    "dst": "uint32",
    "bytes": "uint64",
    "start_ps": "uint64",
    "finish_ps": "uint64",  # UNFINISHED for flows unfinished at the end
    "delivered_bytes": "uint64",
}
# finish_ps of a flow that had not finished when the run stopped.
UNFINISHED = 2**64 - 1


def flow_arrays(cols: Mapping[str, "np.ndarray"], int64: bool = True) -> "dict[str, np.ndarray]":
    """The columns of the per-flow table (``Result.flows``) as numpy arrays,
    from the core's columns: integers (as int64 unless ``int64`` is False),
    times in µs, ``finish_us`` and ``fct_us`` NaN for unfinished flows."""
    import numpy as np

    ints = (lambda k: np.asarray(cols[k]).astype(np.int64)) if int64 else (lambda k: np.asarray(cols[k]))  # noqa: E731
    finish = np.asarray(cols["finish_ps"])
    finish_us = finish / 1e6
    finish_us[finish == UNFINISHED] = np.nan
    start_us = np.asarray(cols["start_ps"]).astype(np.int64) / 1e6
    return {
        "id": ints("id"),
        "src": ints("src"),
        "dst": ints("dst"),
        "bytes": ints("bytes"),
        "start_us": start_us,
        "finish_us": finish_us,
        "delivered_bytes": ints("delivered_bytes"),
        "fct_us": finish_us - start_us,
    }


def flows_frame(cols: Mapping[str, "np.ndarray"]) -> "pd.DataFrame":
    """The per-flow table (``Result.flows``) from the core's columns."""
    import pandas as pd

    return pd.DataFrame(flow_arrays(cols), copy=False)


def series_frame(series: Mapping[str, Any], summary: Mapping[str, Any]) -> "pd.DataFrame":
    """The time series (``Result.series``) from the core's ``series`` dict."""
    import pandas as pd

    bin_us = series["bin_ps"] / 1e6
    cap_bytes_per_bin = summary["hosts"] * summary["host_rate_bps"] * (series["bin_ps"] / 1e12) / 8
    df = pd.DataFrame({"t_us": [i * bin_us for i in range(len(series["bytes"]))], "bytes": series["bytes"]})
    df["goodput"] = df["bytes"] / cap_bytes_per_bin
    return df


class Result:
    """One simulation's outputs.

    ``summary``: goodput, FCT percentiles by size class, fabric statistics (the
    content of summary.json). ``flows``: one row per flow (times in µs; ``fct_us``
    is NaN for flows unfinished at the end), a pandas DataFrame built when first
    read (``flow_columns`` holds the same data as numpy arrays, without pandas).
    ``series``: delivered goodput per time bin (normalised by N·R) when
    ``metrics.time_series`` is set, else None. ``manifest``: config, seed,
    version, wall time, event count.
    """

    def __init__(
        self,
        summary: dict,
        flows: "pd.DataFrame | Mapping[str, np.ndarray]",
        series: "pd.DataFrame | Mapping[str, Any] | None",
        manifest: dict,
        config_toml: str,
        cancelled: bool = False,
        extra: Optional[dict] = None,
    ):
        self.summary = summary
        self.manifest = manifest
        self.config_toml = config_toml
        self.cancelled = cancelled
        self.extra = {} if extra is None else extra
        # `flows` and `series` are given built (DataFrames) or raw (the core's
        # columns / series dict); raw ones become DataFrames when first read.
        self._flows = flows if hasattr(flows, "columns") else None
        self._flow_columns = None if self._flows is not None else dict(flows)
        self._series = series if series is None or hasattr(series, "columns") else None
        self._series_raw = None if self._series is not None or series is None else series

    @property
    def flows(self) -> "pd.DataFrame":
        if self._flows is None:
            self._flows = flows_frame(self._flow_columns)
        return self._flows

    @flows.setter
    def flows(self, df: "pd.DataFrame") -> None:
        self._flows, self._flow_columns = df, None

    @property
    def flow_columns(self) -> "dict[str, np.ndarray]":
        """The per-flow columns as numpy arrays, as the core returned them
        (see ``FLOW_COLUMNS``; times in ps, ``finish_ps`` = ``UNFINISHED`` for
        unfinished flows), without building the DataFrame or importing
        pandas. Read-only views of the arrays."""
        import numpy as np

        if self._flow_columns is None:
            raise AttributeError("flow_columns: this Result was made from a flows DataFrame; use .flows")
        out = {}
        for k, v in self._flow_columns.items():
            a = np.asarray(v).view()
            a.flags.writeable = False
            out[k] = a
        return out

    @property
    def series(self) -> "Optional[pd.DataFrame]":
        if self._series is None and self._series_raw is not None:
            self._series = series_frame(self._series_raw, self.summary)
            self._series_raw = None
        return self._series

    @series.setter
    def series(self, df: "Optional[pd.DataFrame]") -> None:
        self._series, self._series_raw = df, None

    def __repr__(self) -> str:
        return f"Result(fabric={self.summary.get('fabric')!r}, flows={self.summary.get('flows')}, cancelled={self.cancelled})"

    @property
    def fabric(self) -> str:
        return self.summary["fabric"]

    def fct(self, size_class: str = "all", stat: str = "p99_us") -> float:
        """An FCT statistic of a size class, e.g. ``fct("<100KB", "p99_us")``.
        NaN only where the statistic exists but has no value (e.g. no flow of
        the class completed); an unknown class or statistic is a KeyError
        naming the ones this result has."""
        classes = self.summary["fct"]
        c = classes.get(size_class)
        if c is None:
            raise KeyError(f"size class {size_class!r} is not in this result; it has {', '.join(map(repr, classes))}")
        if stat not in c:
            stats = [k for k in c if k not in ("count",)]
            raise KeyError(f"statistic {stat!r} is not known for class {size_class!r}; expected one of {', '.join(stats)}")
        v = c[stat]
        return float("nan") if v is None else float(v)

    def fct_table(self) -> "pd.DataFrame":
        """The FCT statistics of every size class as a DataFrame, one row per
        class: ``count`` (completed), ``unfinished``, ``mean_us``, ``p50_us``,
        ``p99_us``, ``p999_us``, ``max_us`` (of completed flows) and
        ``censored_p99_us`` (unfinished flows counted at their elapsed time:
        the headline statistic when flows are left unfinished)."""
        import pandas as pd

        cols = ["count", "unfinished", "mean_us", "p50_us", "p99_us", "p999_us", "max_us", "censored_p99_us"]
        rows = {cls: {c: st.get(c) for c in cols} for cls, st in self.summary["fct"].items()}
        df = pd.DataFrame.from_dict(rows, orient="index", columns=cols)
        df.index.name = "class"
        return df

    def write(self, out_dir: str | Path, extra: Optional[dict[str, Any]] = None, *, parquet: bool = False,
              flows_csv: bool = True) -> Path:
        """Writes summary.json, flows.csv, series.csv (if any), manifest.json,
        config.toml and the ``extra`` JSON files (name -> object) into ``out_dir``
        in one atomic step (all or nothing); with ``parquet``, also
        flows.parquet (needs pyarrow: the same table, the same values); with
        ``flows_csv`` False, no flows.csv (a result that needs no per-flow
        records, or only the Parquet file). ``out_dir`` may be new, empty or
        an earlier photonet result; anything else (a file, a folder holding
        other files) raises :class:`photonet.io.OutputError` (a ConfigError)
        and is left untouched."""

        def fill(tmp: Path) -> None:
            atomic_write_json(tmp / "summary.json", self.summary)
            # Straight from the core's columns (no pandas table is built)
            # unless the caller read (and perhaps changed) the table: then
            # the table as it is.
            raw = self._flows is None
            if flows_csv:
                if raw:
                    cols = flow_arrays(self._flow_columns, int64=False)
                    atomic_write_csv(tmp / "flows.csv", list(cols), list(cols.values()))
                else:
                    write_frame_csv(tmp / "flows.csv", self._flows)
            if self.series is not None:
                write_frame_csv(tmp / "series.csv", self.series)
            if parquet:
                if raw:  # int64 integers: the dtypes of `Result.flows`
                    cols = flow_arrays(self._flow_columns)
                    atomic_write_parquet(tmp / "flows.parquet", list(cols), list(cols.values()))
                else:
                    self._flows.to_parquet(tmp / "flows.parquet", index=False)
            atomic_write_json(tmp / "manifest.json", self.manifest)
            atomic_write_text(tmp / "config.toml", self.config_toml)
            for name, obj in (extra or {}).items():
                atomic_write_json(tmp / name, obj)

        return atomic_dir(out_dir, fill)


def run(
    config: ConfigLike | None = None,
    *,
    overrides=None,
    progress: Optional[ProgressFn] = None,
    base_dir: str | Path | None = None,
) -> Result:
    """Runs one simulation.

    ``config``: a TOML file path, TOML text, or a dict (missing keys take their
    defaults). ``overrides``: ``["workload.load=0.7", ...]`` or a dict
    ``{"workload.load": 0.7}``. ``progress(now_us, arrived, completed, events)``
    is called now and then; returning False stops the run early. ``base_dir``:
    where relative file names resolve when ``config`` is not a file.
    ``config`` may also be a :class:`photonet.config.Prepared` not yet run
    (a sweep point's: its fabric is not built again; ``overrides`` and
    ``base_dir`` are then not used).
    Raises :class:`photonet.ConfigError` for bad input, before simulating.
    """
    if isinstance(config, Prepared):
        prepared = config
    else:
        prepared = prepare(config, checked_in_tests(overrides), base_dir)
    text = prepared.toml
    started = time.time()
    raw = prepared.run(progress)
    summary = json.loads(raw["summary"])
    seed = tomllib.loads(text).get("seed")
    manifest = {
        **build_info(),
        "inputs": file_digests(prepared.input_files),
        "config_hash": prepared.hash,
        "seed": seed,
        "fabric": summary["fabric"],
        "wall_s": raw["wall_s"],
        "events": summary["events"],
        "sim_time_us": summary["sim_time_us"],
        "started_unix": started,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cancelled": raw["cancelled"],
        "config": text,
    }
    # The flow table and the series stay as the core returned them (numpy
    # arrays owning its buffers) until `Result.flows` / `.series` is read.
    return Result(summary, raw["flows"], raw["series"], manifest, text, cancelled=raw["cancelled"])


def default_config() -> str:
    """The complete default config as TOML."""
    return _core.default_config()


@dataclass(frozen=True)
class FabricInfo:
    """One registered fabric: ``name`` (the value of ``fabric = ...``), ``label``
    (as shown in reports), ``short`` (at most 12 characters: terminal tables and
    legends), ``family`` (electrical, Sirius, NegotiaToR, circuit, HPC / Baldur,
    ideal: plots facet by it), ``table`` (the config table holding its
    parameters, shared by a fabric's variants) and a one-line ``description``."""

    name: str
    label: str
    table: str
    description: str
    short: str = ""
    family: str = ""


def fabrics() -> list[FabricInfo]:
    """Every registered fabric, in the order ``compare`` runs them."""
    out = []
    for f in _core.fabrics():
        out.append(FabricInfo(**f) if isinstance(f, dict) else FabricInfo(f, f, f, ""))
    return out


def fabric_names() -> list[str]:
    """Names accepted by ``fabric = ...``, in the order ``compare`` runs them."""
    return [f.name for f in fabrics()]


@dataclass(frozen=True)
class StatInfo:
    """A statistic a fabric declares: ``fabric`` (the value of ``fabric =
    ...``), ``name`` (its key in a summary's ``fabric_stats``; a ``<…>`` stands
    for a part the run names, e.g. ``drops.<tier>`` for ``drops.tor``),
    ``unit``, ``doc`` and ``when`` (``always``, ``checked``: with
    ``metrics.check_invariants`` only, ``sometimes``: the doc says when)."""

    fabric: str
    name: str
    unit: str
    doc: str
    when: str

    def matches(self, key: str) -> bool:
        """Whether ``key`` (a ``fabric_stats`` key) is this statistic."""
        return stat_name_matches(self.name, key)


def stat_name_matches(declared: str, key: str) -> bool:
    """Whether ``key`` is the declared statistic ``declared`` (a ``<…>`` in it
    stands for a non-empty part)."""
    if "<" not in declared:
        return declared == key
    head, rest = declared.split("<", 1)
    tail = rest.split(">", 1)[1] if ">" in rest else ""
    return len(key) > len(head) + len(tail) and key.startswith(head) and key.endswith(tail)


def statistics(fabric: Optional[str] = None) -> list[StatInfo]:
    """The statistics every registered fabric declares (or ``fabric`` only), in
    registry order: what a run may put in ``summary["fabric_stats"]``."""
    return [StatInfo(**d) for d in _core.statistics() if fabric is None or d["fabric"] == fabric]

