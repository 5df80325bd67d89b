"""Loading configs, applying ``--set key=value`` overrides, and finding data files.

The Rust core owns the schema, the defaults and the validation; this module only
turns files, strings and dicts into TOML text and tells the core where relative
file names (CDFs, traces) should be looked up.
"""
from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any, Mapping, Sequence, Union

try:
    import tomllib
except ModuleNotFoundError:  # Python < 3.11
    import tomli as tomllib  # type: ignore[no-redef]
import tomli_w

from . import _core

ConfigLike = Union[str, os.PathLike, Mapping[str, Any]]


class ConfigError(ValueError):
    """A config that cannot be simulated; the message names the key, value and reason."""


def _package_root() -> Path:
    return Path(__file__).resolve().parent


def workload_search_path() -> list[str]:
    """Directories searched for relative CDF/trace names, after the config's own.

    ``$PHOTONET_WORKLOADS`` (os.pathsep-separated) first, then ``shared/workloads``
    beside the repository (``../shared/workloads`` from the repo root) and beside
    the current directory.
    """
    dirs: list[Path] = []
    env = os.environ.get("PHOTONET_WORKLOADS")
    if env:
        dirs += [Path(p) for p in env.split(os.pathsep) if p]
    here = _package_root()
    for anc in [here, *here.parents, Path.cwd(), *Path.cwd().parents]:
        cand = anc / "shared" / "workloads"
        if cand.is_dir():
            dirs.append(cand)
    seen, out = set(), []
    for d in dirs:
        key = str(d.resolve()) if d.exists() else str(d)
        if key not in seen:
            seen.add(key)
            out.append(key)
    return out


def parse_value(text: str) -> Any:
    """A ``--set`` value: TOML syntax if it parses (numbers, booleans, arrays,
    quoted strings), else the bare text as a string (so ``fabric=esn`` works)."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def apply_overrides(cfg: dict, overrides: Sequence[str] | Mapping[str, Any] | None) -> dict:
    """Applies ``a.b.c=value`` overrides to a nested dict (in place) and returns it."""
    if not overrides:
        return cfg
    items = overrides.items() if isinstance(overrides, Mapping) else [_split(o) for o in overrides]
    for key, value in items:
        if isinstance(value, str) and not isinstance(overrides, Mapping):
            value = parse_value(value)
        parts = key.split(".")
        node = cfg
        for p in parts[:-1]:
            nxt = node.setdefault(p, {})
            if not isinstance(nxt, dict):
                raise ConfigError(f"`{key}`: `{p}` is a value, not a table, so it has no key `{parts[-1]}`")
            node = nxt
        node[parts[-1]] = value
    return cfg


def _split(item: str) -> tuple[str, str]:
    if "=" not in item:
        raise ConfigError(f"--set {item!r}: expected key=value, e.g. workload.load=0.7")
    k, v = item.split("=", 1)
    k = k.strip()
    if not k:
        raise ConfigError(f"--set {item!r}: empty key")
    return k, v.strip()


def load(config: ConfigLike | None = None, overrides=None) -> tuple[dict, Path | None]:
    """Returns (config dict, directory of the config file or None)."""
    base: Path | None = None
    if config is None:
        cfg: dict = {}
    elif isinstance(config, Mapping):
        cfg = _deepcopy(config)
    else:
        text_or_path = os.fspath(config)
        p = Path(text_or_path)
        looks_like_path = "\n" not in text_or_path and (p.suffix == ".toml" or p.exists())
        if looks_like_path:
            if not p.exists():
                raise ConfigError(f"config file {text_or_path!r} does not exist")
            try:
                cfg = tomllib.loads(p.read_text())
            except tomllib.TOMLDecodeError as e:
                raise ConfigError(f"{p}: not valid TOML: {e}") from None
            base = p.resolve().parent
        else:
            try:
                cfg = tomllib.loads(text_or_path)
            except tomllib.TOMLDecodeError as e:
                raise ConfigError(f"not valid TOML: {e}") from None
    apply_overrides(cfg, overrides)
    return cfg, base


def _deepcopy(m: Mapping) -> dict:
    return {k: _deepcopy(v) if isinstance(v, Mapping) else (list(v) if isinstance(v, list) else v) for k, v in m.items()}


def to_toml(cfg: Mapping[str, Any]) -> str:
    return tomli_w.dumps(dict(cfg))


def complete(config: ConfigLike | None = None, overrides=None, base_dir: str | Path | None = None) -> tuple[str, Path | None]:
    """Validates a config in the core and returns (complete TOML with every
    default filled in, base directory). ``base_dir`` is where relative file names
    resolve when the config is not a file. Raises ConfigError."""
    cfg, base = load(config, overrides)
    if base is None and base_dir is not None:
        base = Path(base_dir)
    try:
        text = _core.validate(to_toml(cfg), str(base) if base else None, workload_search_path())
    except _core.ConfigError as e:
        is_file = base is not None and not isinstance(config, Mapping) and "\n" not in os.fspath(config)
        where = f"{os.fspath(config)}: " if is_file else ""
        raise ConfigError(f"{where}{e}") from None
    return text, base


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
