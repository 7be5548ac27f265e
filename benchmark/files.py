"""Every file the benchmark writes, and the path checks made before work starts.

Writes are atomic (a temp file in the target's folder, flushed, then renamed
over the target), so a reader sees the old file or the complete new one, never
half of one, even when the disk fills up or the process is killed mid-write.
Path checks run before any training so that a bad ``--results``/``--out`` or
input file costs nothing.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import stat
import tempfile
from contextlib import contextmanager
from pathlib import Path

from lengthbench.core.errors import InputError, OutputError

RENAME_ATTEMPTS = 20  # into a folder that other processes may remove (``atomic_path(staging=)``)


@contextmanager
def atomic_path(path: str | Path, staging: Path | None = None):
    """Yield a temp path beside ``path`` (same suffix, so writers that infer a
    format from it work); on success rename it over ``path``, on any failure
    remove it and leave ``path`` as it was. With ``staging`` (a folder on the
    same file system that stays), the temp file is written there and
    ``path``'s folder is (re)created for the rename: for a folder other
    processes may remove whenever it is empty."""
    path = Path(path)
    try:
        fd, tmp = tempfile.mkstemp(dir=staging or path.parent, prefix=".tmp-", suffix=path.suffix)
    except OSError as err:  # the temp file's name is ours: say what is wrong with the user's path
        raise OutputError(f"could not write {path}: {unwritable_reason(path, err)}") from None
    os.close(fd)
    try:
        os.chmod(tmp, 0o666 & ~current_umask())  # mkstemp makes 0600; others sharing the folder must read it
        yield Path(tmp)
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        with folder_lock(staging, exclusive=False):
            for attempt in range(RENAME_ATTEMPTS if staging else 1):
                if staging:
                    path.parent.mkdir(parents=True, exist_ok=True)
                try:
                    os.replace(tmp, path)
                    break
                except FileNotFoundError:
                    if attempt + 1 == (RENAME_ATTEMPTS if staging else 1):
                        raise
    except BaseException as err:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(err, OSError) and not isinstance(err, OutputError):
            kept = "; the previous file is unchanged" if path.is_file() else ""
            raise OutputError(f"could not write {path}: {unwritable_reason(path, err)}{kept}") from err
        raise


def unwritable_reason(path: Path, err: OSError) -> str:
    """Why ``path`` cannot be written, in terms of the user's path (never a temp file's name or an errno)."""
    existing = next((p for p in path.parents if p.exists()), None)
    if err.errno == errno.ENOTDIR and existing is not None and not existing.is_dir():
        return f"{existing} is a file, not a folder"
    if err.errno == errno.ENOENT:
        return f"its folder {path.parent} does not exist (create it first)"
    if err.errno == errno.EISDIR or path.is_dir():
        return "it is a folder; give a file path"
    if err.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return f"no permission to write in {path.parent}"
    if err.errno == errno.ENOSPC:
        return "the disk is full"
    return (err.strerror or str(err)).lower()


@contextmanager
def folder_lock(folder: Path | None, exclusive: bool):
    """Hold an advisory lock on ``folder`` itself (flock on the directory):
    writers share it while they (re)create a subfolder and rename into it, a
    remover holds it alone while it removes that subfolder once empty, so
    neither can break the other. Where nothing is given or the file system
    cannot lock a directory (some network mounts), nothing is held and the
    writer's rename retries cover the race."""
    try:
        fd = os.open(folder, os.O_RDONLY) if folder is not None else None
    except OSError:
        fd = None
    try:
        if fd is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
            except OSError:
                pass
        yield
    finally:
        if fd is not None:
            os.close(fd)


def current_umask() -> int:
    """The process umask (read by setting it and putting it back)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_text(path: str | Path, text: str, staging: Path | None = None) -> Path:
    with atomic_path(path, staging) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return Path(path)


def json_text(data) -> str:
    """How every JSON file lengthbench writes is laid out."""
    return json.dumps(data, indent=1, sort_keys=True) + "\n"


def write_json(path: str | Path, data, staging: Path | None = None) -> Path:
    return write_text(path, json_text(data), staging)


FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")  # what a spreadsheet would run as a formula (OWASP)


def guard_formula(value):
    """A text cell a spreadsheet would run as a formula, prefixed with ``'``
    (OWASP's CSV-injection advice), as is one that already looks guarded (so
    that ``unguard_formula`` inverts it exactly); anything else unchanged."""
    if isinstance(value, str) and value.lstrip("'").startswith(FORMULA_STARTS):
        return "'" + value
    return value


def unguard_formula(value):
    """``guard_formula`` undone: lengthbench reads its own CSVs back exactly."""
    if isinstance(value, str) and value.startswith("'") and value.lstrip("'").startswith(FORMULA_STARTS):
        return value[1:]
    return value


FLOAT_FORMAT = "%.6g"  # the one float format every table writes


def as_written(values):
    """Numbers as a table writes them (``FLOAT_FORMAT``): what ranks are taken on, so that two scores a table
    shows alike are one tie (two means that differ in the tenth digit of a float sum are not told apart)."""
    return values.map(lambda v: v if v != v else float(FLOAT_FORMAT % v))  # NaN stays NaN


def write_csv(path: str | Path, frame) -> Path:
    """A pandas frame as CSV, in the one float format every table uses, with
    text cells guarded against formula injection (``guard_formula``)."""
    text_columns = [c for c in frame.columns if frame[c].map(lambda v: isinstance(v, str)).any()]
    guarded = frame.assign(**{c: frame[c].map(guard_formula) for c in text_columns})
    return write_text(path, guarded.to_csv(index=False, float_format=FLOAT_FORMAT))


def save_figure(fig, path: str | Path, **kwargs) -> Path:
    with atomic_path(path) as tmp:
        fig.savefig(tmp, **kwargs)
    return Path(path)


def refuse_foreign_files(folder: Path, ours: dict, flag: str = "--out") -> None:
    """Refuse a folder holding a file under one of the names a command writes (``ours``: name -> a test of its
    text saying lengthbench wrote it) that lengthbench did not write: a user's own file, which the command
    would replace. What an earlier run of the command wrote is rewritten."""
    for name, written_by_us in ours.items():
        path = Path(folder) / name
        if path.is_file() and not written_by_us(path.read_text(errors="replace")):
            raise InputError(f"{flag} {str(folder)!r} holds a {name} that lengthbench did not write; give an empty "
                             "folder, or one lengthbench wrote before")


def ensure_output_dir(path: str | Path, flag: str) -> Path:
    """Create ``path`` if needed and prove it is a writable folder, or raise
    an ``InputError`` naming the flag and the path."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise InputError(f"{flag} {str(path)!r} is a file, not a folder; give a folder path "
                         "(it is created if missing)")
    try:
        path.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=path, prefix=".tmp-probe-")
        os.close(fd)
        os.unlink(probe)
    except OSError as err:
        existing = next((p for p in path.parents if p.exists()), None)
        why = (f"{existing} is a file, not a folder" if existing is not None and not existing.is_dir()
               else "no permission to write in it" if isinstance(err, PermissionError) else
               (err.strerror or str(err)).lower())
        raise InputError(f"{flag} {str(path)!r} is not a writable folder ({why}); give a folder you can write to") \
            from None
    return path


def file_problem(path: str | Path, max_bytes: int) -> str | None:
    """Why ``path`` (through any symlink) is not a regular file of at most
    ``max_bytes`` bytes, or None. It only stats the file: a FIFO or a device is
    never opened (opening a FIFO blocks until a writer comes)."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return "no such file"
    except OSError as err:
        return f"cannot be inspected ({err.strerror or err})"
    kinds = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a device"),
             (stat.S_ISBLK, "a device"), (stat.S_ISSOCK, "a socket"))
    for test, kind in kinds:
        if test(info.st_mode):
            return f"{kind}, not a regular file"
    if not stat.S_ISREG(info.st_mode):
        return "not a regular file"
    if info.st_size > max_bytes:
        return f"{info.st_size} bytes, more than such a file ever holds ({max_bytes} at most)"
    return None


def check_input_file(path: str | Path, what: str, max_bytes: int = 1 << 30) -> Path:
    """Raise an ``InputError`` unless ``path`` is a readable regular file of
    at most ``max_bytes`` bytes (checked before it is opened)."""
    path = Path(path)
    problem = file_problem(path, max_bytes)
    if problem is not None:
        raise InputError(f"{what} {str(path)!r}: {problem}; give the path of a readable {what} file")
    try:
        with open(path, "rb"):
            pass
    except OSError as err:
        raise InputError(f"{what} {str(path)!r} cannot be read ({err.strerror or err})") from None
    return path
