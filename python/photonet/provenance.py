"""What made a result: the photonet build and the input files a config read.

A stored result (a sweep point, a reproduction point) is reused only when it
was made by this build from the same inputs; these are the facts it is
checked against, recorded in every run's ``manifest.json``.
"""
from __future__ import annotations

import functools
import hashlib
import subprocess
from pathlib import Path
from typing import Optional

from . import _core


def file_sha256(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _git(root: Path, *args: str) -> Optional[str]:
    try:
        r = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return r.stdout if r.returncode == 0 else None


@functools.lru_cache(maxsize=1)
def build_info() -> dict:
    """This photonet: its version, the git commit of the source tree it runs
    from and whether that tree had uncommitted changes (None outside a git
    checkout, e.g. an installed wheel), and the SHA-256 of the compiled core,
    which is what decides whether two builds simulate alike."""
    root = Path(__file__).resolve().parents[2]
    commit = dirty = None
    if (root / ".git").exists():
        out = _git(root, "rev-parse", "HEAD")
        commit = out.strip() if out else None
        status = _git(root, "status", "--porcelain", "--untracked-files=no")
        dirty = None if status is None else bool(status.strip())
    return {
        "photonet_version": _core.__version__,
        "git_commit": commit,
        "git_dirty": dirty,
        "core_sha256": file_sha256(_core.__file__),
    }


def same_build(manifest: dict) -> bool:
    """Whether a result's manifest was written by this build (same version and
    the same compiled core)."""
    me = build_info()
    return manifest.get("photonet_version") == me["photonet_version"] and manifest.get("core_sha256") == me["core_sha256"]


def describe_build(manifest: dict) -> str:
    """One line naming the build a manifest records, e.g.
    ``photonet 0.1.0, commit 1a2b3c4d (dirty), core 9f8e7d6c``."""
    commit = manifest.get("git_commit")
    dirty = " (dirty)" if manifest.get("git_dirty") else ""
    core = manifest.get("core_sha256")
    return (f"photonet {manifest.get('photonet_version', '?')}, commit {commit[:8] if commit else 'unknown'}{dirty}, "
            f"core {core[:8] if core else 'unrecorded'}")


def input_digests(complete_toml: str, base_dir: str | Path | None, search: list[str]) -> dict:
    """The files a complete config reads, ``{config key: {"path", "sha256"}}``,
    resolved as the run resolves them."""
    return file_digests(_core.input_files(complete_toml, str(base_dir) if base_dir else None, search))


def file_digests(files) -> dict:
    """``{config key: {"path", "sha256"}}`` of (config key, path) pairs."""
    return {key: {"path": path, "sha256": file_sha256(path)} for key, path in files}
