"""Safe writes: a reader never sees a half-written file or result directory,
photonet never deletes or overwrites what it did not write, files and folders
get the modes the umask asks for, and the temporary files of a killed writer
are removed by the next one.

The rules (checked by :func:`check_result_dir` and :func:`check_work_dir`
before anything runs, and again where the write happens):

* a *result folder* (``photonet run --out``, ``Result.write``) may be written
  where nothing exists, over an empty folder, or over a photonet result (a
  folder holding only the files photonet writes there); anything else — a
  file, a folder holding any other file, the current folder — is refused;
* a *work folder* (``sweep``, ``compare``, ``reproduce`` ``--out``) is written
  into where nothing exists, into an empty folder, or into a folder photonet
  wrote before (it has ``points/`` or ``points.json``); anything else is refused.
"""
from __future__ import annotations

import errno
import fcntl
import json
import os
import shutil
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterable

from .config import ConfigError


class OutputError(ConfigError):
    """An output path photonet will not or cannot write; the message names the
    path and says why."""


# The files ``Result.write`` (and a sweep point) puts in a result folder.
RESULT_FILES = frozenset({"summary.json", "flows.csv", "flows.parquet", "series.csv", "manifest.json", "config.toml",
                          "params.json"})
# The per-flow files a result folder may hold (``Result.write``): a folder
# holding either has its per-flow records.
FLOW_FILES = ("flows.parquet", "flows.csv")
# What marks a folder as a photonet work folder (sweep, compare, reproduce).
WORK_MARKERS = ("points", "points.json")
# A temporary folder of ours holds this file, locked while its writer lives.
LOCK_NAME = ".photonet-writing"
# A temporary file whose writer is gone is removed once it is this old (s): the
# gap between creating a file and locking it is far shorter.
STALE_FILE_AGE_S = 60.0

_umask_lock = threading.Lock()


def current_umask() -> int:
    """The process's umask, read without changing it where the OS allows."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except OSError:
        pass
    with _umask_lock:  # elsewhere: set and restore (briefly racy for other threads)
        m = os.umask(0o022)
        os.umask(m)
        return m


def _chmod_dir(path: Path) -> None:
    os.chmod(path, 0o777 & ~current_umask())


# --- checks ------------------------------------------------------------------------------------------


def _nearest_existing(path: Path) -> Path:
    p = path
    while not os.path.lexists(p):
        if p.parent == p:
            break
        p = p.parent
    return p


def check_writable_parent(path: Path, what: str) -> None:
    """Raises OutputError unless the folders above ``path`` exist or can be
    made and a folder can be created there (tried for real, then removed)."""
    anc = _nearest_existing(path.parent)
    if not anc.is_dir():
        raise OutputError(f"{what} {str(path)!r}: {str(anc)!r} is a file, not a folder, so nothing can be written under it")
    try:
        probe = tempfile.mkdtemp(prefix=".photonet-probe.", dir=anc)
    except OSError as e:
        raise OutputError(f"{what} {str(path)!r}: cannot write in {str(anc)!r}: {e.strerror or e}") from None
    os.rmdir(probe)


def _resolved(path: Path, what: str) -> Path:
    """``path`` resolved; OutputError naming it when it cannot be (a loop of
    symbolic links: Python raises RuntimeError or OSError for it)."""
    try:
        return path.resolve()
    except (OSError, RuntimeError) as e:
        raise OutputError(f"{what} {str(path)!r} cannot be resolved ({e}): is there a loop of symbolic links "
                          f"on the way? Give another folder") from None


def _is_cwd_or_above(path: Path, what: str = "output folder") -> bool:
    try:
        here = Path.cwd().resolve()
    except OSError:
        return False
    p = _resolved(path, what)
    return p == here or p in here.parents


def _listing(names: Iterable[str], limit: int = 5) -> str:
    names = sorted(names)
    more = f" and {len(names) - limit} more" if len(names) > limit else ""
    return ", ".join(names[:limit]) + more


def result_foreign(path: Path, names: list[str]) -> list[str]:
    """The entries of folder ``path`` (named ``names``) that make it not a
    photonet run result: anything but its files, or all if it has no manifest."""
    foreign = [n for n in names if n not in RESULT_FILES or not (path / n).is_file()]
    if not foreign and names and not _has_manifest(path):
        return names
    return foreign


def model_foreign(path: Path, names: list[str]) -> list[str]:
    """As :func:`result_foreign`, for a model's folder (``photonet power|cost``):
    CSV, PNG and JSON files beside its ``model.json``."""
    foreign = [n for n in names if Path(n).suffix not in (".csv", ".png", ".json") or not (path / n).is_file()]
    if not foreign and names and "model.json" not in names:
        return names
    return foreign


Foreign = Callable[[Path, "list[str]"], "list[str]"]


def _folder_names(path: Path, what: str) -> list[str]:
    """The names in existing folder ``path``; OutputError if it is a file or
    cannot be read."""
    if not path.is_dir():
        raise OutputError(f"{what} {str(path)!r} is a file, not a folder; photonet does not overwrite it: give a new name")
    try:
        return [x.name for x in path.iterdir()]
    except OSError as e:
        raise OutputError(f"{what} {str(path)!r}: cannot read it: {e.strerror or e}") from None


def check_result_dir(path: os.PathLike | str, what: str = "output folder", foreign: Foreign = result_foreign) -> Path:
    """Raises OutputError unless ``path`` may be (re)written as a result folder
    (``foreign`` lists the entries of an existing folder that are not ours)."""
    path = Path(path)
    if path.name in ("", ".", "..") or _is_cwd_or_above(path, what):
        raise OutputError(f"{what} {str(path)!r} is the current folder or one above it; photonet writes a result into a "
                          f"folder of its own: give a new name, e.g. results/run")
    if path.is_symlink():
        raise OutputError(f"{what} {str(path)!r} is a symbolic link; give the folder itself or a new name")
    if path.exists():
        names = _folder_names(path, what)
        theirs = foreign(path, [n for n in names if n != LOCK_NAME])
        if theirs:
            raise OutputError(f"{what} {str(path)!r} is not empty and not a photonet result (it holds "
                              f"{_listing(theirs)}); photonet never deletes what it did not write: "
                              f"give a new or empty folder")
    check_writable_parent(path, what)
    return path


def check_work_dir(path: os.PathLike | str, what: str = "output folder") -> Path:
    """Raises OutputError unless ``path`` may be written into as a sweep,
    compare or reproduce folder."""
    path = Path(path)
    if path.is_symlink() and not path.is_dir():
        raise OutputError(f"{what} {str(path)!r} is a symbolic link to nothing")
    if path.exists():
        names = _folder_names(path, what)
        if names and not any(m in names for m in WORK_MARKERS):
            raise OutputError(f"{what} {str(path)!r} is not empty and not a photonet sweep folder (it holds {_listing(names)}); "
                              f"photonet never overwrites what it did not write: give a new or empty folder")
        try:
            probe = tempfile.mkdtemp(prefix=".photonet-probe.", dir=path)
        except OSError as e:
            raise OutputError(f"{what} {str(path)!r}: cannot write in it: {e.strerror or e}") from None
        os.rmdir(probe)
    else:
        check_writable_parent(path, what)
    return path


def check_file_target(path: os.PathLike | str, what: str = "output file") -> Path:
    """Raises OutputError unless ``path`` can be written as a file (a folder
    there is refused)."""
    path = Path(path)
    if path.is_dir():
        raise OutputError(f"{what} {str(path)!r} is a folder, not a file")
    check_writable_parent(path, what)
    return path


def _has_manifest(path: Path) -> bool:
    try:
        return "photonet_version" in json.loads((path / "manifest.json").read_text())
    except (OSError, ValueError, TypeError):
        return False


# --- stale temporaries -----------------------------------------------------------------------------------


def _try_lock(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except OSError as e:
        if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            return False
        raise


def _stale_dir(d: Path) -> bool:
    """True if ``d`` is a temporary folder of ours whose writer is gone: it
    holds our lock file and nobody holds the lock."""
    return _unlocked(d / LOCK_NAME)


def _stale_file(f: Path) -> bool:
    try:
        if time.time() - f.lstat().st_mtime < STALE_FILE_AGE_S:
            return False
    except OSError:
        return False
    return _unlocked(f)


def _unlocked(f: Path) -> bool:
    """True if file ``f`` exists (not through a link) and nobody holds its lock."""
    try:
        fd = os.open(f, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return False
    try:
        return _try_lock(fd)
    finally:
        os.close(fd)  # closing drops the probe's lock


def remove_stale_temporaries(folder: os.PathLike | str, name: str | None = None) -> list[Path]:
    """Removes the temporary files and folders that killed writers left in
    ``folder`` (those of target ``name`` only, if given). Only entries named like
    ours (``.NAME.XXXX.tmp``) whose writer is provably gone are removed: a folder
    must hold our unlocked lock file, a file must be unlocked and old. Returns
    what was removed."""
    folder = Path(folder)
    prefix = f".{name}." if name else "."
    removed: list[Path] = []
    try:
        with os.scandir(folder) as it:
            entries = [folder / e.name for e in it if e.name.startswith(prefix) and e.name.endswith(".tmp")]
    except OSError:
        return removed
    for e in entries:
        if e.is_symlink():
            continue
        if e.is_dir():
            if _stale_dir(e):
                shutil.rmtree(e, ignore_errors=True)
                removed.append(e)
        elif e.is_file() and _stale_file(e):
            try:
                os.unlink(e)
                removed.append(e)
            except OSError:
                pass
    return removed


# --- writes ----------------------------------------------------------------------------------------------


def _mkdirs(path: Path) -> None:
    """``mkdir -p`` with the umask's modes (``Path.mkdir`` already honours it)."""
    path.mkdir(parents=True, exist_ok=True)


@contextmanager
def _atomic_replace(path: Path):
    """Yields ``(fd, tmp)``: a locked temporary file beside ``path`` (the
    umask's modes) for the caller to fill, through ``fd`` or by its name
    ``tmp``; then syncs it to disk and renames it over ``path``. On any error
    the temporary is removed and ``path`` is left as it was."""
    if path.is_dir() and not path.is_symlink():
        raise OutputError(f"output file {str(path)!r} is a folder, not a file")
    _mkdirs(path.parent)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # a live writer's temporary is never taken as stale
        os.fchmod(fd, 0o666 & ~current_umask())
        yield fd, tmp
        os.fsync(fd)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    finally:
        os.close(fd)
    remove_stale_temporaries(path.parent, path.name)


def atomic_write_bytes(path: os.PathLike | str, data: bytes) -> None:
    with _atomic_replace(Path(path)) as (fd, _):
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]


def atomic_write_text(path: os.PathLike | str, text: str) -> None:
    atomic_write_bytes(path, text.encode())


def atomic_write_json(path: os.PathLike | str, obj: Any) -> None:
    atomic_write_text(path, json.dumps(obj, indent=2, sort_keys=True, default=str) + "\n")


def atomic_write_csv(path: os.PathLike | str, names: list[str], arrays: list) -> None:
    """Writes numeric columns (numpy arrays of int64, uint64, uint32 or
    float64) as CSV, byte for byte what pandas' ``to_csv(index=False)`` writes
    (floats as ``repr``, NaN empty), streamed by the core (``_core.write_csv``):
    no text of the whole table in memory. Atomic, as :func:`atomic_write_bytes`."""
    import numpy as np

    from . import _core

    with _atomic_replace(Path(path)) as (_, tmp):
        _core.write_csv(tmp, list(names), [np.ascontiguousarray(a) for a in arrays], os.linesep)


def atomic_write_parquet(path: os.PathLike | str, names: list[str], arrays: list) -> None:
    """Writes numpy columns as one Parquet file (pyarrow, zstd), straight from
    the arrays: no pandas table is built. ``pandas.read_parquet`` gives back
    the same columns, dtypes and values. Atomic, as :func:`atomic_write_bytes`."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table({n: pa.array(a) for n, a in zip(names, arrays)})
    with _atomic_replace(Path(path)) as (_, tmp):
        pq.write_table(table, tmp, compression="zstd")


def frame_csv_columns(df) -> "tuple[list[str], list] | None":
    """``(names, arrays)`` for :func:`atomic_write_csv` if ``atomic_write_csv``
    writes the DataFrame ``df`` exactly as ``df.to_csv(index=False)`` does: every
    column a plain numpy int or float64 under a unique name that CSV need not
    quote. None otherwise."""
    import numpy as np

    names = list(df.columns)
    if not names or len(set(names)) != len(names):
        return None
    arrays = []
    for name in names:
        if not isinstance(name, str) or not name or set(name) & set(',"\r\n'):
            return None
        dt = df[name].dtype
        if not isinstance(dt, np.dtype):
            return None  # pandas extension types (nullable ints, categories, ...)
        a = df[name].to_numpy()
        if dt.kind == "f" and dt.itemsize == 8:
            arrays.append(a)
        elif dt.kind == "i":
            arrays.append(a.astype(np.int64, copy=False))
        elif dt.kind == "u":
            arrays.append(a.astype(np.uint64, copy=False))
        else:
            return None  # float32 prints its own shortest digits; bools, objects, times
    return names, arrays


def write_frame_csv(path: os.PathLike | str, df) -> None:
    """Writes ``df.to_csv(index=False)`` to ``path`` atomically; a numeric
    table is streamed by the core (:func:`atomic_write_csv`), anything else
    goes through pandas."""
    cols = frame_csv_columns(df)
    if cols is None:
        atomic_write_text(path, df.to_csv(index=False))
    else:
        atomic_write_csv(path, *cols)


class _TempDir:
    """A temporary folder beside a target, locked while this process writes it."""

    def __init__(self, parent: Path, name: str):
        self.path = Path(tempfile.mkdtemp(prefix=f".{name}.", suffix=".tmp", dir=parent))
        # The lock is taken on a file of another name and then renamed to the
        # lock name, so a cleaner never finds the lock file unlocked while we live.
        fd, pending = tempfile.mkstemp(prefix=".lock.", dir=self.path)
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.replace(pending, self.path / LOCK_NAME)
        self.fd = fd

    def release(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def remove(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)
        self.release()


def atomic_dir(path: os.PathLike | str, fill: Callable[[Path], None], foreign: Foreign = result_foreign) -> Path:
    """Builds a result folder in a temporary sibling with ``fill(tmpdir)`` and
    renames it into place. An existing folder is replaced only if it is empty or
    a photonet result (see :func:`check_result_dir`); anything else raises
    OutputError and is left as it was. On error nothing changes. Temporary
    folders of killed writers of the same target are removed."""
    path = Path(path)
    check_result_dir(path, "output folder", foreign)
    _mkdirs(path.parent)
    remove_stale_temporaries(path.parent, path.name)
    tmp = _TempDir(path.parent, path.name)
    try:
        fill(tmp.path)
        _chmod_dir(tmp.path)
        mode = 0o666 & ~current_umask()
        for f in tmp.path.iterdir():
            if f.is_file() and not f.is_symlink() and f.name != LOCK_NAME:
                os.chmod(f, mode)
        try:
            os.rename(tmp.path, path)  # fails if ``path`` is a non-empty folder
        except OSError as e:
            if e.errno not in (errno.ENOTEMPTY, errno.EEXIST):
                raise
            _replace_result(path, tmp.path, foreign)
    except BaseException:
        tmp.remove()
        raise
    # The lock file moved with the folder; a kill before this leaves only a
    # hidden file of ours in a complete result.
    try:
        os.unlink(path / LOCK_NAME)
    except FileNotFoundError:
        pass
    tmp.release()
    return path


def _replace_result(path: Path, new: Path, foreign: Foreign) -> None:
    """Replaces the photonet result at ``path`` with the folder ``new``: the old
    one is moved into a locked temporary folder first, so a kill between the two
    renames leaves only temporaries the next writer removes."""
    check_result_dir(path, "output folder", foreign)  # still ours, just before touching it
    trash = _TempDir(path.parent, path.name)
    try:
        os.rename(path, trash.path / "old")
        os.rename(new, path)
    except BaseException:
        if not path.exists() and (trash.path / "old").exists():
            os.rename(trash.path / "old", path)
        raise
    finally:
        trash.remove()
