"""Claiming runs, so that concurrent drivers on one results folder split the
grid instead of each training every cell.

Before a run trains, the process that will train it creates
``<results>/<run_id>.claim`` atomically (a written file hard-linked into
place: of two processes racing for it, exactly one succeeds, and nobody
sees it half-written), holding its host, pid and start time, and keeps its modification time fresh while it works (a
heartbeat). Another process skips a claimed run and later collects its
record. A claim is stale, and may be taken over, when its owner is a dead
process on this host, when its heartbeat is older than ``STALE_AFTER_S``
(an owner on another host that stopped), or when this process has watched
it unchanged (modification time, size and content) for ``STALE_AFTER_S`` on
its own clock: so a claim with any content (empty, not JSON, a list, wrong
fields) or a time in the future is never waited on forever, and is named
once in a warning. The driver removes a claim after writing the run's
record, so a run is never left both unclaimed and unrecorded while someone
works on it.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
from pathlib import Path

from lengthbench.benchmark.files import file_problem

log = logging.getLogger(__name__)

HEARTBEAT_S = 20.0  # how often an owner refreshes its claims
STALE_AFTER_S = 120.0  # a claim not refreshed for this long belongs to a stopped owner
CLAIM_SUFFIX = ".claim"
MAX_CLAIM_BYTES = 4096  # a claim is ~60 bytes
_watched: dict[Path, tuple[tuple, float]] = {}  # claim path -> (what it looked like, since when, monotonic)
_warned: set[Path] = set()


def _owner() -> dict:
    return {"host": socket.gethostname(), "pid": os.getpid(), "claimed_at": time.time()}


def _owner_problem(owner) -> str | None:
    """Why parsed claim content is not an owner record, or None."""
    if not isinstance(owner, dict):
        return f"a JSON {type(owner).__name__}, not a claim"
    if not isinstance(owner.get("host"), str) or isinstance(owner.get("pid"), bool) \
            or not isinstance(owner.get("pid"), int):
        return "no host name and process id"
    return None


def _alive(owner: dict) -> bool:
    if owner["host"] != socket.gethostname():
        return True  # another host: only the heartbeat can tell
    try:
        os.kill(owner["pid"], 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):
        return True
    return True


def _unchanged_for(path: Path, look: tuple) -> float:
    """How long (this process's clock) the claim has looked like ``look``."""
    now = time.monotonic()
    seen = _watched.get(path)
    if seen is None or seen[0] != look:
        _watched[path] = (look, now)
        return 0.0
    return now - seen[1]


def is_stale(path: Path) -> bool:
    """True when the claim at ``path`` has no live owner: its owner is a dead
    process here, its heartbeat is old, or it has not changed while this
    process watched it for ``STALE_AFTER_S`` (any content, any clock)."""
    problem = file_problem(path, MAX_CLAIM_BYTES)
    if problem == "no such file":
        return False
    if problem is not None:  # a FIFO, a folder, a huge file: never opened, never a claim to respect
        if path not in _warned:
            _warned.add(path)
            log.warning("claim %s is %s; it does not hold its run", path, problem)
        return True
    try:
        info = path.stat()
        raw = path.read_bytes()
    except FileNotFoundError:
        return False
    except OSError:
        return True  # a claim we cannot read cannot be one we must respect
    quiet = _unchanged_for(path, (info.st_mtime_ns, info.st_size, raw))
    age = time.time() - info.st_mtime
    try:
        owner = json.loads(raw.decode("utf-8"))
        problem = _owner_problem(owner)
    except (UnicodeDecodeError, ValueError):
        problem = "not JSON" if raw.strip() else "empty"
    if problem is not None:
        if path not in _warned:
            _warned.add(path)
            log.warning("claim %s is damaged (%s); it is taken over once it stays unchanged for %.0f s",
                        path, problem, STALE_AFTER_S)
        return age > STALE_AFTER_S or quiet > STALE_AFTER_S
    return age > STALE_AFTER_S or quiet > STALE_AFTER_S or not _alive(owner)


def try_claim(path: Path) -> bool:
    """Take the claim at ``path`` for this process; False when a live owner
    holds it. A stale claim is removed and claimed anew."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}")
    tmp.write_text(json.dumps(_owner()))
    try:
        for _ in range(2):
            try:
                os.link(tmp, path)  # atomic, and the claim is never seen half-written
                return True
            except FileExistsError:
                if not is_stale(path):
                    return False
                _remove(path)  # of two processes removing one stale claim, one then wins the link
        return False
    finally:
        _remove(tmp)


def held_elsewhere(path: Path) -> bool:
    """True while another live process holds the claim at ``path``."""
    return path.exists() and not is_stale(path)


def release(path: Path) -> None:
    _remove(path)


def _remove(path: Path) -> None:
    try:
        path.unlink()
    except FileNotFoundError:
        pass


def release_abandoned(paths) -> None:
    """Remove those of the claims at ``paths`` that belong to this process or
    to dead processes on this host (after an interrupt: their runs were not
    finished and will not be)."""
    for path in paths:
        if file_problem(path, MAX_CLAIM_BYTES):
            continue
        try:
            owner = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if _owner_problem(owner) is None and owner["host"] == socket.gethostname() \
                and (owner["pid"] == os.getpid() or not _alive(owner)):
            _remove(path)


class Heartbeat:
    """Keeps claims fresh from a daemon thread while their runs train."""

    def __init__(self, paths: list[Path], every: float = HEARTBEAT_S):
        self.paths, self.every = paths, every
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._beat, daemon=True)

    def _beat(self) -> None:
        while not self.stop.wait(self.every):
            for path in self.paths:
                try:
                    os.utime(path)
                except FileNotFoundError:
                    pass

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()
