"""Design-space sweeps: many configurations x many workloads, measured on the cycle-level
simulator and priced by the resource model, as one table.

``sweep(configs, workloads)`` returns a ``pandas.DataFrame`` with one row per (configuration,
workload): the configuration's fingerprint and main parameters, the workload's key, its cycles,
GEMM utilisation, GOPS, DRAM bytes and milliseconds at the clock, and the configuration's
resources from :func:`hw.cost.resource_model` (and from yosys with ``yosys=True``) with whether
it fits the xc7z020 of a PYNQ board: its resources, and its AXI master on the PS's DRAM ports
(``master_fits``: 32 or 64 bits; a 128-bit master does not fit). ``grid(**lists)`` builds the
configurations of a parameter grid.

A workload is any picklable object with a ``key`` (a string naming it in the table and the cache)
and a ``build(cfg)`` method returning an :class:`isa.Program` (run once on the ``sim`` device
against zeroed DRAM with the program's segments) or a :class:`runtime.model.ModelImage` (run whole
on ``sim`` with seeded inputs; its accelerator steps' cycles, GEMM steps, operations and bytes
are summed). :mod:`compiler.workloads` makes them from conv layers and small models. A workload
that cannot be built or run for a configuration (any :class:`isa.VtaforgeError`, e.g. a
``CompileError`` for tiles that do not fit the buffers) gives a row with its ``error`` and NaNs;
so does an unexpected exception (its type named), which is not cached.

Measurements run in worker processes (``processes``; a dask ``client`` instead when given) and
are cached as one JSON file per (fingerprint, workload key) under ``cache``, so a repeated sweep
only reads files. A cache entry is keyed by the workload's ``key`` alone: give a changed workload
a new key, or clear the directory after changing the simulator or the compiler.

``runtime`` does not import the compiler; ``hw.cost`` is imported when a sweep runs (it needs no
Amaranth), ``hw.resources`` only with ``yosys=True``, pandas only to build the table.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import os
import re
import time
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from isa import AccelConfig, ConfigError, Program, VtaforgeError

if TYPE_CHECKING:
    import pandas

__all__ = [
    "DEFAULT_CACHE",
    "MEASURES",
    "PARAMETERS",
    "Grid",
    "SweepError",
    "Workload",
    "grid",
    "measure",
    "sweep",
]

#: Where :func:`sweep` caches measurements unless told otherwise.
DEFAULT_CACHE = Path("build") / "sweep_cache"
#: The configuration parameters each row repeats (``alu_mul`` where the configuration has it).
PARAMETERS = (
    "batch",
    "block_in",
    "block_out",
    "uop_buff_size",
    "inp_buff_size",
    "wgt_buff_size",
    "acc_buff_size",
    "axi_width",
    "clock_mhz",
    "alu_mul",
)
#: What :func:`measure` reports for one (configuration, workload).
MEASURES = ("cycles", "gemm_utilisation", "gops", "dram_bytes", "ms", "host_s", "error")
_RESOURCES = ("lut", "ff", "dsp", "bram36")
_PART = "xc7z020"
_CACHE_VERSION = 1


@runtime_checkable
class Workload(Protocol):
    """What :func:`sweep` measures: a ``key`` naming it, and ``build(cfg)`` returning an
    ``isa.Program`` or a ``runtime.model.ModelImage`` for the configuration (raising a
    ``VtaforgeError`` where it cannot be built). It must pickle to run in worker processes."""

    key: str

    def build(self, cfg: AccelConfig) -> Any: ...


# ---------------------------------------------------------------------------------- grid
class Grid(list[AccelConfig]):
    """The valid configurations of a :func:`grid`, in product order; ``skipped`` lists each
    invalid combination's parameters with the :class:`ConfigError` that rejected it."""

    skipped: list[tuple[dict[str, Any], ConfigError]]

    def __init__(self, configs: Iterable[AccelConfig] = ()) -> None:
        super().__init__(configs)
        self.skipped = []


def grid(
    base: AccelConfig | str = "default", *, strict: bool = False, **parameter_lists: Sequence[Any]
) -> Grid:
    """Every combination of ``parameter_lists`` (configuration parameter -> values) applied to
    ``base`` (a configuration or preset name), in ``itertools.product`` order, e.g.
    ``grid(block_in=[8, 16, 32], block_out=[8, 16, 32], axi_width=[64, 128])``.

    A combination the configuration rejects is skipped and recorded in ``skipped`` (with
    ``strict``, its ConfigError is raised instead). An unknown parameter name raises ConfigError
    whatever ``strict`` says."""
    origin = AccelConfig.resolve(base)
    known = set(origin.to_dict())
    for name, values in parameter_lists.items():
        if name not in known:
            raise ConfigError(name, values, "not a configuration parameter")
        if isinstance(values, str | bytes) or not isinstance(values, Iterable):
            raise ConfigError(name, values, "grid() needs a list of values")
    names = list(parameter_lists)
    result = Grid()
    for values in itertools.product(*(list(parameter_lists[n]) for n in names)):
        changes = dict(zip(names, values, strict=True))
        try:
            result.append(origin.replace(**changes))
        except ConfigError as err:
            if strict:
                raise
            result.skipped.append((changes, err))
    return result


# ---------------------------------------------------------------------------------- measuring
def measure(cfg: AccelConfig, workload: Workload, *, seed: int = 0) -> dict[str, Any]:
    """Build ``workload`` for ``cfg`` and run it on the ``sim`` device: its :data:`MEASURES`
    (``error`` None). A ``VtaforgeError`` (or any other exception, its type named) is returned as
    the ``error`` with NaN measures instead of being raised. ``seed`` draws a model's inputs."""
    started = time.perf_counter()
    try:
        built = workload.build(cfg)
        stats = _run(cfg, built, seed)
    except VtaforgeError as err:
        return _failed(str(err), started, cacheable=True)
    except Exception as err:  # a bug somewhere below: keep the other rows, name it loudly
        return _failed(f"{type(err).__name__}: {err}", started, cacheable=False)
    cycles = sum(s.cycles for s in stats)
    gemm = sum(s.counters.gemm_counter for s in stats)
    ops = sum(s.ops for s in stats)
    seconds = cycles / (cfg.clock_mhz * 1e6)
    return {
        "cycles": cycles,
        "gemm_utilisation": gemm / cycles if cycles else math.nan,
        "gops": ops / seconds / 1e9 if cycles else math.nan,
        "dram_bytes": sum(s.dram_bytes for s in stats),
        "ms": 1e3 * seconds,
        "host_s": time.perf_counter() - started,
        "error": None,
    }


def _failed(message: str, started: float, *, cacheable: bool) -> dict[str, Any]:
    row: dict[str, Any] = {name: math.nan for name in MEASURES}
    row["host_s"] = time.perf_counter() - started
    row["error"] = message
    if not cacheable:
        row["_uncacheable"] = True
    return row


def _run(cfg: AccelConfig, built: Any, seed: int) -> list[Any]:
    """The ``CycleStats`` of each accelerator program the built workload runs."""
    from runtime.devices import open_device
    from runtime.model import Model, ModelImage

    device = open_device("sim", cfg)
    if isinstance(built, Program):
        device.run(built, np.zeros(built.dram_extent, np.uint8))
        return [device.last_stats]
    if isinstance(built, ModelImage):
        model = Model(built)
        rng = np.random.default_rng(seed)
        inputs = {name: _random(rng, shape, dtype) for name, (shape, dtype) in model.inputs.items()}
        return [stats for _, stats in model.run(inputs, device).cycle_stats]
    raise TypeError(f"build() returned a {type(built).__name__}, not a Program or a ModelImage")


def _random(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    kind = np.dtype(dtype)
    if kind.kind == "f":
        return rng.standard_normal(shape).astype(kind)
    info = np.iinfo(kind)
    return rng.integers(info.min, info.max, shape, endpoint=True, dtype=kind)


# ---------------------------------------------------------------------------------- the cache
def _safe(key: str) -> str:
    """A file name for ``key``: its safe characters and, where any were replaced, a digest."""
    name = re.sub(r"[^A-Za-z0-9._-]", "_", key)
    if name != key:
        name += "-" + hashlib.sha256(key.encode()).hexdigest()[:8]
    return name


def _cache_path(cache: Path, cfg: AccelConfig, key: str) -> Path:
    return cache / cfg.fingerprint / f"{_safe(key)}.json"


def _read_cache(path: Path, cfg: AccelConfig, key: str) -> dict[str, Any] | None:
    try:
        record = json.loads(path.read_text())
        if (
            record["version"] != _CACHE_VERSION
            or record["workload"] != key
            or AccelConfig.from_dict(record["config"]) != cfg  # added parameters: defaults
        ):
            return None
        result = record["result"]
        return {name: _from_json(name, result[name]) for name in MEASURES}
    except (OSError, KeyError, TypeError, ValueError):  # missing, damaged or another version's
        return None


def _write_cache(path: Path, cfg: AccelConfig, key: str, result: dict[str, Any]) -> None:
    record = {
        "version": _CACHE_VERSION,
        "config": cfg.to_dict(),
        "workload": key,
        "result": {name: _to_json(result[name]) for name in MEASURES},
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}")
    temporary.write_text(json.dumps(record, indent=2) + "\n")
    temporary.replace(path)


def _to_json(value: Any) -> Any:
    return None if isinstance(value, float) and math.isnan(value) else value


def _from_json(name: str, value: Any) -> Any:
    return math.nan if value is None and name != "error" else value


# ---------------------------------------------------------------------------------- the sweep
@dataclass(frozen=True)
class _Task:
    """One unit of work for a worker: a measurement, or a yosys estimate (``workload`` None)."""

    cfg: AccelConfig
    workload: Workload | None
    estimates: Path | None = None


def _execute(task: _Task) -> dict[str, Any]:
    """Run one task (in a worker process): :func:`measure`, or the yosys estimate's counts."""
    if task.workload is not None:
        return measure(task.cfg, task.workload)
    from hw.resources import estimate, estimate_cached

    try:
        if task.estimates is None:
            result = estimate(task.cfg, _PART)
        else:
            result = estimate_cached(task.cfg, task.estimates, _PART)
    except VtaforgeError as err:
        return {"error": str(err)}
    counts = {name: getattr(result, name) for name in _RESOURCES}
    return counts | {"fits": result.fits, "error": None}


def sweep(
    configs: Iterable[AccelConfig],
    workloads: Iterable[Workload],
    *,
    cache: Path | str | None = DEFAULT_CACHE,
    processes: int = 0,
    client: Any = None,
    progress: bool = True,
    yosys: bool = False,
) -> pandas.DataFrame:
    """Measure every workload on every configuration (see the module docstring) and return one
    row per (configuration, workload), in that order.

    Columns: ``fingerprint``, the :data:`PARAMETERS`, ``workload`` (its key), the
    :data:`MEASURES` (``error`` holds why a row has NaNs; missing, ``pandas.isna``, where
    none), the resource model's ``lut``, ``ff``, ``dsp`` and ``bram36`` on the xc7z020,
    ``master_fits`` (its AXI master on the PS's ports: :meth:`hw.parts.Part.takes_master`) and
    ``fits`` (both) and, with ``yosys``, the synthesized ``yosys_lut`` ... ``yosys_fits`` (its
    resources and the master) and ``yosys_error`` (cached by fingerprint in
    ``cache/estimates``; minutes per configuration).

    ``cache``: the directory of cached measurements (None: no cache); ``processes``: worker
    processes (0: one per CPU; 1: in this process); ``client``: a ``dask.distributed.Client``
    that runs the work instead; ``progress``: a tqdm progress bar.
    """
    import pandas

    from hw.cost import resource_model
    from hw.parts import part

    configs, workloads = list(configs), list(workloads)
    _check(configs, workloads)
    directory = None if cache is None else Path(cache)
    pairs = [(cfg, w) for cfg in configs for w in workloads]
    results: dict[int, dict[str, Any]] = {}
    tasks: dict[int, _Task] = {}
    for index, (cfg, workload) in enumerate(pairs):
        cached = None
        if directory is not None:
            cached = _read_cache(_cache_path(directory, cfg, workload.key), cfg, workload.key)
        if cached is not None:
            results[index] = cached
        else:
            tasks[index] = _Task(cfg, workload)
    unique = list({cfg.fingerprint: cfg for cfg in configs}.values())
    if yosys:
        estimates = None if directory is None else directory / "estimates"
        for offset, cfg in enumerate(unique):
            tasks[len(pairs) + offset] = _Task(cfg, None, estimates)

    with _progress(len(pairs) + (len(unique) if yosys else 0), progress) as bar:
        bar.update(len(results))
        for index, result in _dispatch(tasks, processes, client):
            results[index] = result
            task = tasks[index]
            uncacheable = result.pop("_uncacheable", False)
            if task.workload is not None and directory is not None and not uncacheable:
                path = _cache_path(directory, task.cfg, task.workload.key)
                _write_cache(path, task.cfg, task.workload.key, result)
            bar.update(1)

    resources = {cfg.fingerprint: resource_model(cfg, _PART) for cfg in unique}
    synthesized = {cfg.fingerprint: results.get(len(pairs) + i) for i, cfg in enumerate(unique)}
    rows = []
    for index, (cfg, workload) in enumerate(pairs):
        model = resources[cfg.fingerprint]
        row: dict[str, Any] = {"fingerprint": cfg.fingerprint}
        row |= {name: getattr(cfg, name, True) for name in PARAMETERS}
        row["workload"] = workload.key
        measured = results[index]
        row |= {name: measured[name] for name in MEASURES if name != "error"}
        master_fits = part(_PART).takes_master(cfg.axi_width)
        row |= {name: getattr(model, name) for name in _RESOURCES}
        row |= {"master_fits": master_fits, "fits": model.fits and master_fits}
        if yosys:
            found = synthesized[cfg.fingerprint] or {}
            row |= {f"yosys_{n}": found.get(n, math.nan) for n in _RESOURCES}
            row["yosys_fits"] = found.get("fits", math.nan) if master_fits else False
            row["yosys_error"] = found.get("error")
        row["error"] = measured["error"]
        rows.append(row)
    return pandas.DataFrame(rows)


class SweepError(VtaforgeError, ValueError):
    """A sweep cannot start: what it was given is not configurations and workloads."""


def _check(configs: list[AccelConfig], workloads: list[Workload]) -> None:
    if not configs or not workloads:
        raise SweepError("a sweep needs at least one configuration and one workload")
    for cfg in configs:
        if not isinstance(cfg, AccelConfig):
            raise SweepError(f"configs must be isa.AccelConfig objects, not {type(cfg).__name__}")
    keys = set()
    for workload in workloads:
        if not isinstance(workload, Workload):
            raise SweepError(f"{workload!r} is not a workload (a key and a build(cfg) method)")
        if workload.key in keys:
            raise SweepError(f"two workloads have the key {workload.key!r}")
        keys.add(workload.key)


def _dispatch(
    tasks: dict[int, _Task], processes: int, client: Any
) -> Iterator[tuple[int, dict[str, Any]]]:
    """Each task's index and result, as they complete."""
    if not tasks:
        return
    if client is not None:
        from dask.distributed import as_completed as dask_completed

        indices = list(tasks)
        futures = client.map(_execute, [tasks[i] for i in indices], pure=False)
        positions = {future.key: i for future, i in zip(futures, indices, strict=True)}
        for future in dask_completed(futures):
            yield positions[future.key], future.result()
        return
    workers = min(len(tasks), processes or os.cpu_count() or 1)
    if workers <= 1:
        for index, task in tasks.items():
            yield index, _execute(task)
        return
    with ProcessPoolExecutor(max_workers=workers) as pool:
        pending: dict[Future[dict[str, Any]], int] = {
            pool.submit(_execute, task): index for index, task in tasks.items()
        }
        for future in as_completed(pending):
            yield pending[future], future.result()


class _NoBar:
    def update(self, _count: int) -> None:
        pass

    def __enter__(self) -> _NoBar:
        return self

    def __exit__(self, *_exc: object) -> None:
        pass


def _progress(total: int, enabled: bool) -> Any:
    """A tqdm bar over ``total`` runs, or nothing (``enabled`` False, or tqdm not installed)."""
    if enabled:
        try:
            from tqdm.auto import tqdm
        except ImportError:
            pass
        else:
            return tqdm(total=total, desc="sweep", unit="run")
    return _NoBar()
