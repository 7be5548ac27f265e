"""Third-party encodings and model families: from a Python file path or from
installed packages that declare an entry point in ``lengthbench.plugins``
(``core/entry_points.py``; such a package may add tasks and data formats
too). Either way the module registers what it adds with
``@register_encoding``, ``@register_family``, ``@register_task`` or
``@register_format`` when imported; a command that takes a plugin file also
takes an installed package's name.

``run --plugin``, ``check`` and ``submit`` all go through ``load_plugin``
(import, with any failure reported as one line naming the file and line) and
``check_plugins`` (the encoding contract), so a file that one command refuses
every command refuses.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import multiprocessing
import random
import stat
import sys
import traceback
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from lengthbench.core.entry_points import distribution_key, installed_plugins, set_plugin_loader
from lengthbench.core.errors import InputError
from lengthbench.models.contract import check_encoding, check_family
from lengthbench.models.encodings.base import (
    ENCODINGS,
    check_encoding_name,
    encoding_entry,
    encoding_names,
    register_encoding,
    set_source,
)
from lengthbench.models.families import FAMILIES, set_family_source
from lengthbench.tasks.base import PACKAGED_SOURCES, TASKS
from lengthbench.tasks.formats import FORMATS

log = logging.getLogger(__name__)

# Top-level names of lengthbench before its modules moved under ``lengthbench.``.
OLD_TOP_LEVEL = ("models", "tasks", "benchmark", "leaderboard")


class PluginError(InputError):
    """A plugin file that cannot be imported, registers nothing, or fails the contract."""


@dataclass(frozen=True)
class PluginFile:
    """An encoding file to load; ``rename`` registers its one encoding under
    another leaderboard name (``submit --name``). Picklable, so pool workers
    load exactly what the main process loaded."""

    path: str
    rename: str | None = None


def _line_in(path: Path, err: BaseException) -> str:
    """``path:line`` of the deepest frame of ``err`` inside the plugin file."""
    frames = [f for f in traceback.extract_tb(err.__traceback__) if Path(f.filename) == path]
    return f"{path}:{frames[-1].lineno}" if frames else str(path)


def _import_failure(path: Path, err: BaseException) -> PluginError:
    where = _line_in(path, err)
    if isinstance(err, SyntaxError):
        return PluginError(f"{path}:{err.lineno}: syntax error in the encoding file: {err.msg}")
    if isinstance(err, SystemExit):
        return PluginError(f"{where}: the encoding file called sys.exit({err.code!r}) while being "
                           "imported; a plugin must only define and register encodings")
    if isinstance(err, ModuleNotFoundError) and (err.name or "").split(".")[0] in OLD_TOP_LEVEL:
        return PluginError(f"{where}: the encoding file imports {err.name!r}; lengthbench's modules live under "
                           f"lengthbench.* since 0.2: write `from lengthbench.{err.name} import ...`")
    if isinstance(err, ModuleNotFoundError):
        return PluginError(f"{where}: the encoding file imports {err.name!r}, which is not installed "
                           "here; install it or remove the import")
    message = str(err).splitlines()[0] if str(err) else ""
    return PluginError(f"{where}: importing the encoding file raised {type(err).__name__}: {message}")


def _import_file(path: Path, key: str) -> list[str]:
    """Execute the file as module ``key``; returns the encodings it registered
    (and registers none if the import fails part-way)."""
    try:
        source = path.read_bytes().decode("utf-8")
        code = compile(source, str(path), "exec")
    except UnicodeDecodeError as err:
        raise PluginError(f"{path}: not a Python source file (not UTF-8 text: byte {err.object[err.start]:#04x} "
                          f"at offset {err.start}); give a .py file") from None
    except SyntaxError as err:
        raise _import_failure(path, err) from None
    except ValueError as err:  # e.g. null bytes in the source
        raise PluginError(f"{path}: not a Python source file ({err}); give a .py file") from None
    before = _registered()
    module = importlib.util.module_from_spec(importlib.util.spec_from_file_location(key, path))
    sys.modules[key] = module
    try:
        with globals_kept(str(path)):
            exec(code, module.__dict__)
    except KeyboardInterrupt:
        raise
    except BaseException as err:  # noqa: BLE001  (SystemExit included: reported, never obeyed)
        del sys.modules[key]
        for name in _registered() - before:
            _unregister(name)
        raise _import_failure(path, err) from None
    module.__lengthbench_registered__ = [n for n in [*encoding_names(), *FAMILIES.names()] if n not in before]
    return module.__lengthbench_registered__


def _torch_globals() -> dict:
    """The process-wide settings a plugin's import could change under the built-in cells of the same grid."""
    return {"default dtype": torch.get_default_dtype(), "deterministic algorithms":
            torch.are_deterministic_algorithms_enabled(), "threads": torch.get_num_threads(),
            "torch random state": torch.random.get_rng_state(), "numpy random state": np.random.get_state(),
            "python random state": random.getstate()}


def _restore(saved: dict) -> None:
    torch.set_default_dtype(saved["default dtype"])
    torch.use_deterministic_algorithms(saved["deterministic algorithms"])
    torch.set_num_threads(saved["threads"])
    torch.random.set_rng_state(saved["torch random state"])
    np.random.set_state(saved["numpy random state"])
    random.setstate(saved["python random state"])


def _same(a, b) -> bool:
    if isinstance(a, torch.Tensor):
        return torch.equal(a, b)
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, np.ndarray):
        return np.array_equal(a, b)
    return a == b


@contextmanager
def globals_kept(what: str):
    """Run a plugin's import, then put back any torch, numpy or Python global
    it changed (default dtype, deterministic flag, threads, random states),
    with a warning naming each: a plugin must not change the results of the
    built-in cells that share its grid."""
    saved = _torch_globals()
    try:
        yield
    finally:
        changed = [name for name, value in _torch_globals().items() if not _same(value, saved[name])]
        if changed:
            _restore(saved)
            log.warning("%s changed %s at import; put back, so the other cells of the grid run as without it",
                        what, ", ".join(changed))


def _registered() -> set[str]:
    """Every encoding, model family, task and data format name registered now."""
    return set(encoding_names()) | set(FAMILIES.names()) | set(TASKS.names()) | set(FORMATS.names())


def _unregister(name: str) -> None:
    """Take back a name a plugin's failed import registered."""
    next(r for r in (ENCODINGS, FAMILIES, TASKS, FORMATS) if name in r).remove(name)


def _set_source(name: str, source: str) -> None:
    (set_family_source if name in FAMILIES else set_source)(name, source)


MAX_PLUGIN_BYTES = 1 << 20  # an encoding file is a few kB of Python


def _file_problem(path: Path) -> str | None:
    """Why ``path`` is not a regular file of plausible size (a FIFO is never opened), or None."""
    info = path.stat()
    if not stat.S_ISREG(info.st_mode):
        return "a folder, not a file" if stat.S_ISDIR(info.st_mode) else "not a regular file (a FIFO or a device)"
    if info.st_size > MAX_PLUGIN_BYTES:
        return f"{info.st_size} bytes, far more than an encoding file ({MAX_PLUGIN_BYTES} at most)"
    return None


def load_plugin(plugin: PluginFile) -> list[str]:
    """Import ``plugin.path`` (once per process) and return the encoding names
    it contributes: its own, or ``plugin.rename`` for its single encoding."""
    path = Path(plugin.path).resolve()
    if not path.exists():
        installed = distribution_plugin(plugin.path)
        if installed:
            return installed
        raise PluginError(f"encoding file {plugin.path!r} does not exist" + (
            "" if installed is None else f"; the installed package {plugin.path!r} registers nothing through its "
                                         "entry points") + " (give a .py file, or an installed package's name)")
    problem = _file_problem(path)
    if problem is not None:
        raise PluginError(f"encoding file {plugin.path!r} is {problem}; give a .py file")
    key = f"lengthbench_plugin_{hashlib.sha1(str(path).encode()).hexdigest()[:10]}"
    if key in sys.modules:
        names = list(sys.modules[key].__lengthbench_registered__)
    else:
        digest = file_digest(path)
        names = _import_file(path, key)
        for name in names:
            _set_source(name, f"file {path.name} sha256:{digest}")
    if not names:
        raise PluginError(f"{plugin.path} registers no encoding or model family; decorate a PositionEncoding "
                          "subclass with @register_encoding('your-name') (or a model builder with "
                          "@register_family('your-name', ...))")
    if plugin.rename is None or plugin.rename in names:
        return names
    if len(names) != 1 or names[0] in FAMILIES:
        raise PluginError(f"--name needs a file with one encoding; {plugin.path} registers "
                          f"{', '.join(names)}{' (a model family keeps its own name)' if names[0] in FAMILIES else ''}")
    check_encoding_name(plugin.rename)
    entry = encoding_entry(names[0])
    if plugin.rename in encoding_names() and encoding_entry(plugin.rename).factory is entry.factory:
        return [plugin.rename]  # renamed by an earlier load in this process
    register_encoding(plugin.rename, defaults=entry.defaults, description=entry.description,
                      source=entry.source)(entry.factory)
    return [plugin.rename]


def check_plugins(plugins, shapes) -> tuple[list[str], list]:
    """Load every plugin and run each of its encodings and model families
    through its contract at ``shapes`` (``contract.CheckShape``); returns
    (names, reports)."""
    names = [name for plugin in plugins for name in load_plugin(plugin)]
    return names, check_names(names, shapes)


def check_names(names, shapes) -> list:
    """Each registered encoding or model family of ``names`` through its contract at ``shapes``."""
    return [(check_family if name in FAMILIES else check_encoding)(name, shapes) for name in names]


def contract_failure(plugins, reports) -> PluginError:
    """The one-line refusal of plugins whose encodings failed the contract."""
    failed = [r.failure() for r in reports if not r.passed]
    files = ", ".join(p.path for p in plugins)
    return PluginError(f"{files}: {'; '.join(failed)} fails the contract check, so nothing "
                       f"was run; `lengthbench check FILE` shows why")


def packaged(names) -> list[str]:
    """The names among ``names`` that an installed package's entry point registered."""
    return [name for name in names if name in ORIGINS]


def package_failure(reports) -> PluginError:
    """The one-line refusal of installed packages' encodings or families that failed the contract."""
    failed = [f"{ORIGINS[r.encoding][1]}: {r.failure()}" for r in reports if not r.passed]
    return PluginError(f"{'; '.join(failed)} fails the contract check, so nothing was run; "
                       "`lengthbench check PACKAGE` shows why")


# Filled once per process by ``load_entry_points``: each name an entry point registered -> its distribution's
# ``distribution_key`` and "package <name> <version>"; the packages that failed to load -> why; the entry points
# (``module:object``) imported.
ORIGINS: dict[str, tuple[str, str]] = {}
BROKEN: dict[str, str] = {}
LOADED: set[str] = set()


WORKER = {"ray": False}  # set in a Ray task's process (``benchmark.ray_executor``)


def _in_worker() -> bool:
    """A grid's worker process: a pool's child, or a Ray task's."""
    return multiprocessing.parent_process() is not None or WORKER["ray"]


def load_entry_points() -> list[str]:
    """Import every installed entry point of the plugins' groups (once per
    process); returns the names they registered. A broken one (an import
    error, a name already taken) is set aside with one warning line naming
    its package, and the built-ins and the other plugins work as without it."""
    added = []
    for ep in installed_plugins():
        dist = ep.dist.name if getattr(ep, "dist", None) else ep.value
        key = distribution_key(dist)
        if key in BROKEN or ep.value in LOADED:
            continue
        before = _registered()
        try:
            with globals_kept(f"entry point {ep.value}"):
                ep.load()
        except KeyboardInterrupt:
            raise
        except BaseException as err:  # noqa: BLE001  (a broken installed plugin: one line, never the built-ins)
            for name in _registered() - before:
                _unregister(name)
            message = str(err).splitlines()[0] if str(err) else ""
            BROKEN[key] = (f"package {dist}'s entry point {ep.name} = {ep.value} failed to load: "
                           f"{type(err).__name__}: {message}; uninstall or fix that package")
            if not _in_worker():  # the command that started the workers has said it once
                log.warning("%s (set aside; everything else works as without it)", BROKEN[key])
            continue
        version = ep.dist.version if getattr(ep, "dist", None) else "unknown"
        names = sorted(_registered() - before)
        for name in names:
            ORIGINS[name] = (key, f"package {dist} {version}")
            if name in ENCODINGS or name in FAMILIES:
                _set_source(name, f"package {dist} {version}, entry point {ep.value}")
            else:  # a task or a data format: its release and module digest enter its runs' configs
                PACKAGED_SOURCES[name] = f"package {dist} {version}, {ep.module} sha256:{_module_digest(ep.module)}"
        LOADED.add(ep.value)
        added += names
    return added


def file_digest(path: Path) -> str:
    """The first 12 hex digits of a file's SHA-256: a plugin's source, as its runs' configs name it."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:12]


def _module_digest(module: str) -> str:
    """``file_digest`` of an imported module's source file ("unknown" without one)."""
    path = getattr(sys.modules.get(module), "__file__", None)
    return file_digest(path) if path and Path(path).is_file() else "unknown"


def distribution_plugin(name: str) -> list[str] | None:
    """The encodings and model families an installed distribution called
    ``name`` registers through its entry points (loading them: its tasks and
    formats join their registries), or None when no such distribution has
    any; a broken one is refused in one line."""
    key = distribution_key(name)
    if not any(distribution_key(ep.dist.name) == key for ep in installed_plugins() if getattr(ep, "dist", None)):
        return None
    load_entry_points()
    if key in BROKEN:
        raise PluginError(BROKEN[key])
    return [n for n, (of, _) in ORIGINS.items() if of == key and (n in ENCODINGS or n in FAMILIES)]


set_plugin_loader(load_entry_points)  # every registry's first miss loads the installed plugins (``discover_plugins``)


def load_plugins(plugins=()) -> None:
    """Entry points, then plugin files (what a pool worker does at start)."""
    load_entry_points()
    for plugin in plugins:
        load_plugin(plugin)
