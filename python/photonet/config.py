"""Loading configs, applying ``--set key=value`` overrides, and finding data files.

The Rust core owns the schema, the defaults and the validation; this module only
turns files, strings and dicts into TOML text and tells the core where relative
file names (CDFs, traces) should be looked up.
"""
from __future__ import annotations

import datetime
import hashlib
import os
import stat
from pathlib import Path
from typing import Any, Mapping, Sequence, Union

try:
    import tomllib
except ModuleNotFoundError:  # Python < 3.11
    import tomli as tomllib  # type: ignore[no-redef]
import tomli_w

from . import _core

ConfigLike = Union[str, os.PathLike, Mapping[str, Any]]
# The largest config file read (the biggest shipped ones are a few KB).
MAX_CONFIG_BYTES = 16 << 20


class ConfigError(ValueError):
    """A config that cannot be simulated; the message names the key, value and reason."""


def _package_root() -> Path:
    return Path(__file__).resolve().parent


def package_workloads() -> Path:
    """The standard flow-size CDFs shipped with photonet (see its README.md
    for their provenance)."""
    return _package_root() / "workloads"


def workload_search_path() -> list[str]:
    """Folders searched for a relative CDF/trace name after the config's own
    folder: each folder of ``$PHOTONET_WORKLOADS`` (os.pathsep-separated), then
    the standard workloads shipped in the package (:func:`package_workloads`)."""
    dirs: list[Path] = []
    env = os.environ.get("PHOTONET_WORKLOADS")
    if env:
        dirs += [Path(p) for p in env.split(os.pathsep) if p]
    dirs.append(package_workloads())
    seen, out = set(), []
    for d in dirs:
        key = str(d.resolve()) if d.exists() else str(d)
        if key not in seen:
            seen.add(key)
            out.append(key)
    return out


def toml_loads(text: str, where: str = "") -> dict:
    """``tomllib.loads`` with every failure a ConfigError (nesting too deep for
    the parser included), prefixed by ``where``."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{where}not valid TOML: {e}") from None
    except RecursionError:
        raise ConfigError(f"{where}not valid TOML for photonet: arrays or tables nested too deeply") from None


def parse_value(text: str) -> Any:
    """A ``--set`` value: TOML syntax if it parses (numbers, booleans, arrays,
    quoted strings), else the bare text as a string (so ``fabric=esn`` works).
    A value spanning lines is refused: TOML would read the lines after the
    first as other keys and the value would silently lose them."""
    if "\n" in text or "\r" in text:
        raise ConfigError(f"value {text!r} spans several lines; give one key=value per --set")
    try:
        doc = tomllib.loads(f"v = {text}")
    except (tomllib.TOMLDecodeError, RecursionError):
        return text
    if list(doc) != ["v"]:
        raise ConfigError(f"value {text!r} holds more than one TOML value; give one key=value per --set")
    return doc["v"]


def apply_overrides(cfg: dict, overrides: Sequence[str] | Mapping[str, Any] | None) -> dict:
    """Applies ``a.b.c=value`` overrides to a nested dict (in place) and returns it."""
    if not overrides:
        return cfg
    if isinstance(overrides, Mapping):
        items = [(str(k), plain(v, str(k))) for k, v in overrides.items()]
    else:
        items = [split_setting(o) for o in overrides]
    for key, value in items:
        if isinstance(value, str) and not isinstance(overrides, Mapping):
            value = parse_value(value)
        parts = key.split(".")
        if not all(parts):
            raise ConfigError(f"override key {key!r}: empty part in a dotted key")
        node = cfg
        for p in parts[:-1]:
            nxt = node.setdefault(p, {})
            if not isinstance(nxt, dict):
                raise ConfigError(f"`{key}`: `{p}` is a value, not a table, so it has no key `{parts[-1]}`")
            node = nxt
        node[parts[-1]] = value
    return cfg


def split_setting(item: str, flag: str = "--set", expected: str = "key=value, e.g. workload.load=0.7") -> tuple[str, str]:
    """``key=value`` -> (key, value), both stripped; a ConfigError naming
    ``flag`` without ``=`` or a key."""
    if "=" not in item:
        raise ConfigError(f"{flag} {item!r}: expected {expected}")
    k, v = item.split("=", 1)
    k = k.strip()
    if not k:
        raise ConfigError(f"{flag} {item!r}: empty key")
    return k, v.strip()


def load(config: ConfigLike | None = None, overrides=None) -> tuple[dict, Path | None]:
    """Returns (config dict, directory of the config file or None).

    ``config``: a path (``os.PathLike``, or a string naming a file: one line
    without ``=``), TOML text, or a dict. Raises ConfigError."""
    base: Path | None = None
    if config is None:
        cfg: dict = {}
    elif isinstance(config, Mapping):
        cfg = plain(config)
    else:
        text_or_path = os.fspath(config)
        if isinstance(text_or_path, bytes):
            text_or_path = os.fsdecode(text_or_path)
        if _looks_like_path(config, text_or_path):
            p = Path(text_or_path)
            cfg = toml_loads(read_config_text(p), f"{p}: ")
            base = p.resolve().parent
        else:
            cfg = toml_loads(text_or_path)
    apply_overrides(cfg, overrides)
    return cfg, base


def _looks_like_path(config: Any, text: str) -> bool:
    """A path object is a path; a string is one if it is a single line and a
    file of that name exists, or it ends in ``.toml``, or it holds no ``=`` and
    no ``[`` (every TOML document with a setting has one)."""
    if isinstance(config, os.PathLike):
        return True
    if "\n" in text or not text.strip():
        return False
    return text.endswith(".toml") or os.path.lexists(text) or ("=" not in text and "[" not in text)


def read_config_text(p: Path) -> str:
    """The text of config file ``p``, parsed to check it is TOML; ConfigError
    naming the file if it is missing, a folder, unreadable, not UTF-8 or not TOML."""
    name = str(p)
    if not os.path.lexists(p):
        raise ConfigError(f"config file {name!r} does not exist")
    if p.is_dir():
        raise ConfigError(f"config file {name!r} is a folder, not a TOML file")
    try:
        if not stat.S_ISREG(p.stat().st_mode):
            raise ConfigError(f"config file {name!r} is not a regular file (a device, FIFO or socket); "
                              f"photonet reads configs from regular files")
        with open(p, "rb") as f:
            raw = f.read(MAX_CONFIG_BYTES + 1)
    except OSError as e:
        raise ConfigError(f"config file {name!r} cannot be read: {e.strerror or e}") from None
    if len(raw) > MAX_CONFIG_BYTES:
        raise ConfigError(f"config file {name!r} is over {MAX_CONFIG_BYTES:,} bytes; a photonet config is a few KB "
                          f"(put flows in a trace file: workload.pattern.kind = \"trace\")")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw[: e.start].count(b"\n") + 1
        raise ConfigError(f"config file {name!r} is not UTF-8 text (byte 0x{raw[e.start]:02x} on line {line}); "
                          f"TOML files are UTF-8: save it as UTF-8") from None
    toml_loads(text, f"{p}: ")
    return text


def plain(value: Any, key: str = "") -> Any:
    """A copy of ``value`` made of TOML's types only: numpy scalars and arrays
    become Python numbers and lists, paths strings. None and anything TOML cannot
    hold raise ConfigError naming ``key``."""
    where = f"`{key}`" if key else "the config"
    if value is None:
        raise ConfigError(f"{where} is None: TOML has no null; leave the key out to use its default")
    if isinstance(value, bool) or isinstance(value, (str, int, float)):
        return value
    if isinstance(value, Mapping):
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise ConfigError(f"{where}: key {k!r} is a {type(k).__name__}; keys must be strings")
            out[k] = plain(v, f"{key}.{k}" if key else k)
        return out
    if isinstance(value, (list, tuple)):
        return [plain(v, f"{key}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    mod = type(value).__module__.split(".")[0]
    if mod == "numpy":
        if hasattr(value, "tolist"):  # numpy scalars and arrays
            return plain(value.tolist(), key)
    if isinstance(value, (datetime.date, datetime.time)):
        return value
    raise ConfigError(f"{where} = {value!r}: a {type(value).__name__} is not a config value "
                      f"(expected a number, string, boolean, list or table)")


def to_toml(cfg: Mapping[str, Any]) -> str:
    return tomli_w.dumps(dict(cfg))


def _in_core(core_fn, config: ConfigLike | None, overrides, base_dir: str | Path | None):
    """``core_fn(toml, base, search)`` on the loaded config, its errors as
    ConfigError naming the file; returns (its result, base directory)."""
    cfg, base = load(config, overrides)
    if base is None and base_dir is not None:
        base = Path(base_dir)
    try:
        out = core_fn(to_toml(cfg), str(base) if base else None, workload_search_path())
    except _core.ConfigError as e:
        is_file = base is not None and not isinstance(config, Mapping) and "\n" not in os.fspath(config)
        where = f"{os.fspath(config)}: " if is_file else ""
        raise ConfigError(f"{where}{e}") from None
    return out, base


def complete(config: ConfigLike | None = None, overrides=None, base_dir: str | Path | None = None) -> tuple[str, Path | None]:
    """Validates a config in the core and returns (complete TOML with every
    default filled in, base directory). ``base_dir`` is where relative file names
    resolve when the config is not a file. Raises ConfigError."""
    return _in_core(_core.validate, config, overrides, base_dir)


class Prepared:
    """A config that crossed into the core once: parsed, checked and built
    there. ``toml`` is the complete config, ``hash`` its key
    (:func:`config_hash`), ``base`` where its relative file names resolved,
    ``input_files`` the files it read as (config key, path) pairs;
    ``run(progress)`` runs it (once) and returns the core's raw result."""

    def __init__(self, core, base: Path | None):
        self._core = core
        self.toml: str = core.config
        self.hash = config_hash(self.toml)
        self.base = base
        self.input_files: list[tuple[str, str]] = list(core.input_files)

    def run(self, progress=None) -> dict:
        try:
            return self._core.run(progress)
        except _core.ConfigError as e:
            raise ConfigError(str(e)) from None


def prepare(config: ConfigLike | None = None, overrides=None, base_dir: str | Path | None = None) -> Prepared:
    """Loads a config and prepares its run in the core (one crossing: the
    fabric is planned and built once). Raises ConfigError."""
    core, base = _in_core(_core.prepare, config, overrides, base_dir)
    return Prepared(core, base)


def with_override(overrides, key: str, value):
    """``overrides`` (None, a list of ``key=value`` or a dict) plus one more."""
    if overrides is None:
        return {key: value}
    if isinstance(overrides, Mapping):
        return {**overrides, key: value}
    return [*overrides, f"{key}={'true' if value is True else value}"]


def checked_in_tests(overrides):
    """``overrides``, plus ``metrics.check_invariants = true`` when
    ``PHOTONET_CHECK_INVARIANTS=1`` (the test suite: every run checks every
    fabric invariant)."""
    if os.environ.get("PHOTONET_CHECK_INVARIANTS") == "1":
        return with_override(overrides, "metrics.check_invariants", True)
    return overrides


def prepare_unchecked(cfg: Mapping[str, Any], base_dir: str | Path | None = None) -> tuple[str, Prepared]:
    """A sweep point's config prepared for its run (checked and built once):
    (its complete TOML, the prepared run). The TOML is the config's own even
    when the test suite has the run check invariants
    (:func:`checked_in_tests`), so a point's key does not depend on that."""
    checked = checked_in_tests(None)
    prepared = prepare(cfg, checked, base_dir)
    text = prepared.toml
    if checked and not plain(cfg).get("metrics", {}).get("check_invariants", False):
        text = _metrics_key(text, "check_invariants", "false")
    return text, prepared


def _metrics_key(text: str, key: str, value: str) -> str:
    """Complete TOML ``text`` with ``[metrics] key`` set to ``value``."""
    lines = text.split("\n")
    start = lines.index("[metrics]")
    for i in range(start + 1, len(lines)):
        if lines[i].startswith("["):
            break
        if lines[i].split("=")[0].strip() == key:
            lines[i] = f"{key} = {value}"
            return "\n".join(lines)
    raise ValueError(f"[metrics] {key} is not in the complete config")


def config_hash(complete_toml: str) -> str:
    """Key of a sweep point: a pure function of the complete config (incl. seed)."""
    canon = tomli_w.dumps(tomllib.loads(complete_toml))
    return hashlib.sha256(canon.encode()).hexdigest()[:16]


def warnings(config: ConfigLike | None = None, overrides=None) -> list[str]:
    """Settings of a config that parse but cannot affect its run (e.g. the
    table of a fabric other than the selected one that changes its defaults)."""
    cfg, _ = load(config, overrides)
    try:
        return list(_core.warnings(to_toml(cfg)))
    except _core.ConfigError as e:
        raise ConfigError(str(e)) from None


def _deepcopy(m: Mapping) -> dict:
    return plain(m)
