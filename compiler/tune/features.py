"""Features of a lowered candidate for the cost model: numbers read off its loop IR.

:func:`features` turns a candidate's loop IR (:func:`~compiler.lower.schedule_to_ir`, then
simplified, so indices keep one expression per dimension) into a fixed-length vector, in the
spirit of AutoTVM's itervar features:

- for the innermost :data:`LEVELS` loops around the heaviest store (the one run most often):
  each loop's extent, its kind (serial, parallel, vectorized, unrolled, virtual thread), the
  bytes the loop touches in global and in local buffers (each buffer's footprint over the loop
  and the loops inside it, from which loop variables its indices read) and its reuse (iterations
  per touched element);
- for the whole function: the work (store executions) of compute, copy (``dma_copy``) and ALU
  stages, the bytes each copy moves per scope, allocations per scope, tensor-intrinsic regions,
  guards, and loop counts per kind.

Values are ``log2(1 + x)``, so candidates of tasks of different sizes stay comparable (transfer
learning trains one model on many tasks).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from compiler.expr import Expr, Var
from compiler.loop_ir import (
    Allocate,
    AttrKey,
    AttrStmt,
    Buffer,
    BufferAddress,
    For,
    ForKind,
    IfThenElse,
    Load,
    LoweredFunc,
    Scope,
    Stmt,
    Store,
)
from compiler.visit import children, free_vars, walk

__all__ = ["FEATURE_COUNT", "LEVELS", "features"]

#: Loops described one by one, innermost first (shallower nests are padded with zeros).
LEVELS = 8
_KINDS = (ForKind.SERIAL, ForKind.PARALLEL, ForKind.VECTORIZED, ForKind.UNROLLED, ForKind.VTHREAD)
_SCOPES = (Scope.GLOBAL, Scope.LOCAL, Scope.ACCEL_INP, Scope.ACCEL_WGT, Scope.ACCEL_ACC)
_PER_LEVEL = 1 + len(_KINDS) + 3
_REGIONS = ("compute", "dma_copy", "alu")
_GLOBAL = len(_REGIONS) + 2 * len(_SCOPES) + 2 + len(_KINDS) + 1
#: The length of every feature vector.
FEATURE_COUNT = LEVELS * _PER_LEVEL + _GLOBAL


@dataclass(frozen=True)
class _Loop:
    var: Var
    extent: int
    kind: ForKind


@dataclass(frozen=True)
class _StoreSite:
    """A store with the loops around it and the region (pragma) it sits in."""

    store: Store
    loops: tuple[_Loop, ...]
    region: str
    tensorized: bool

    @property
    def trips(self) -> int:
        return math.prod(loop.extent for loop in self.loops)


def _log(x: float) -> float:
    return math.log2(1.0 + x)


def _sites(
    stmt: Stmt, loops: tuple[_Loop, ...], region: str, tensorized: bool
) -> Iterator[_StoreSite]:
    if isinstance(stmt, For):
        loops = (*loops, _Loop(stmt.var, stmt.extent, stmt.kind))
    elif isinstance(stmt, AttrStmt) and stmt.key is AttrKey.PRAGMA:
        region = str(stmt.value[0])
    elif isinstance(stmt, AttrStmt) and stmt.key is AttrKey.TENSORIZE:
        tensorized = True
    elif isinstance(stmt, Store):
        yield _StoreSite(stmt, loops, region, tensorized)
        return
    for child in children(stmt):
        if isinstance(child, Stmt):
            yield from _sites(child, loops, region, tensorized)


def _accesses(store: Store) -> list[tuple[Buffer, tuple[Expr, ...]]]:
    found = [(store.buffer, store.indices)]
    for node in walk(store.value):
        if isinstance(node, Load | BufferAddress):
            found.append((node.buffer, node.indices))
    return found


def _footprint(buffer: Buffer, indices: tuple[Expr, ...], inner: dict[Var, int]) -> int:
    """Elements of ``buffer`` touched while the loops ``inner`` (var -> extent) run."""
    total = 1
    for dim, index in zip(buffer.shape, indices, strict=False):
        span = math.prod(inner.get(v, 1) for v in free_vars(index))
        total *= min(span, dim)
    return total


def _level(site: _StoreSite, depth: int, accesses: list) -> list[float]:
    """The features of the loop ``depth`` levels out from the innermost around ``site``."""
    loop = site.loops[-1 - depth]
    inner = {lp.var: lp.extent for lp in site.loops[len(site.loops) - 1 - depth :]}
    touched = {"global": 0, "local": 0}
    elements = 0
    for buffer, indices in accesses:
        count = _footprint(buffer, indices, inner)
        elements += count
        where = "global" if buffer.scope is Scope.GLOBAL else "local"
        touched[where] += count * buffer.dtype.bytes
    iterations = math.prod(inner.values())
    kinds = [float(loop.kind is kind) for kind in _KINDS]
    reuse = iterations * len(accesses) / max(elements, 1)
    return [_log(loop.extent), *kinds, _log(touched["global"]), _log(touched["local"]), _log(reuse)]


def features(func: LoweredFunc) -> np.ndarray:
    """The feature vector (length :data:`FEATURE_COUNT`) of ``func``'s loop IR."""
    sites = list(_sites(func.body, (), "compute", False))
    vector: list[float] = []
    heaviest = max(sites, key=lambda s: s.trips, default=None)
    if heaviest is not None:
        accesses = _accesses(heaviest.store)
        for depth in range(min(LEVELS, len(heaviest.loops))):
            vector += _level(heaviest, depth, accesses)
    vector += [0.0] * (LEVELS * _PER_LEVEL - len(vector))

    work = dict.fromkeys(_REGIONS, 0)
    moved = dict.fromkeys(_SCOPES, 0)
    for site in sites:
        region = site.region if site.region in work else "compute"
        work[region] += site.trips
        if region == "dma_copy" and site.store.buffer.scope in moved:
            moved[site.store.buffer.scope] += site.trips * site.store.buffer.dtype.bytes
    allocated = dict.fromkeys(_SCOPES, 0)
    loops = dict.fromkeys(_KINDS, 0)
    intrinsics = guards = 0
    for node in walk(func.body):
        if isinstance(node, Allocate) and node.buffer.scope in allocated:
            allocated[node.buffer.scope] += node.buffer.size * node.buffer.dtype.bytes
        elif isinstance(node, For) and node.kind in loops:
            loops[node.kind] += 1
        elif isinstance(node, AttrStmt) and node.key is AttrKey.TENSORIZE:
            intrinsics += 1
        elif isinstance(node, IfThenElse):
            guards += 1
    tensorized = sum(s.trips for s in sites if s.tensorized)
    vector += [_log(work[r]) for r in _REGIONS]
    vector += [_log(moved[s]) for s in _SCOPES] + [_log(allocated[s]) for s in _SCOPES]
    vector += [_log(intrinsics), _log(guards), *(_log(loops[k]) for k in _KINDS)]
    vector.append(_log(tensorized))
    return np.asarray(vector, dtype=np.float32)
