"""Auto-tuning: how fast the XGBoost tuner finds good knobs, and what the knobs are worth.

(a) Trials to come within 5% of the best candidate, XGBoost tuner vs random search, on three CPU
convolutions (ResNet-18's 3x3 layers in the NCHWc layout, seconds at 1 thread) and three small
accelerator convolutions (cycles on the cycle-level simulator, default configuration). Each
space is measured whole, so "best" is the space's best; the tuners then replay the shared
measurements (random averaged over 10 seeds on the CPU and 20 on the accelerator, XGBoost over
3), a run that never gets within 5% counting the space's size + 1. The XGBoost tuner runs cold
and warm-started (transfer learning) by the records of the same target's other two workloads,
as a tuning session over a model's layers would have them. Accelerator candidates whose
simulation takes over ``--timeout`` seconds count as failures. Target: XGBoost <= 1/3 of random.
(b) The tuned CPU convolutions and a 512^3 matmul tuned by 32 XGBoost trials vs PyTorch's conv2d
and numpy's matmul in the same run, at 1 and 2 threads (the 1-thread winner, and at 2 threads the
best of it, its parallel twin, the template's default and 16 (matmul: 8) XGBoost trials measured
at 2 threads; targets: geomean >= 1.0x PyTorch, matmul >= 0.75x numpy).
(c) TVM's MetaSchedule (``_metaschedule.py``: NHWC, ``tune_tir``, in a child process), where
apache-tvm is installed, on the CPU convolutions of (b) at 1 and 2 threads, next to our kernels
of (b), at the same trial count: the candidate measurements behind our kernel at that thread
count. Our 1-thread kernel is the best of its space, measured whole in (a), so MetaSchedule gets
the space's size (64, 48, 32); our 2-thread kernel is the best of that search's winner, its
parallel twin, the default and ``THREAD_TRIALS`` XGBoost trials measured at 2 threads, so
MetaSchedule, which tunes at 2 threads from the start, gets the space's size + 3 +
``THREAD_TRIALS``. MetaSchedule's space is far larger than our template's: this budget is ours,
small for it.
(d) ResNet-18 layers on the accelerator: default knobs vs the best of the default and
``--accel-trials`` XGBoost trials warm-started (transfer learning) by the records of (a).

Every candidate is measured in an isolated worker process (``compiler.tune.Worker``) and
checked against its numpy reference. CPU times depend on the host: its CPU is named.

Run: ``python benchmarks/tuning.py [--targets cpu|accel|metaschedule|both] [--accel-trials N]
[--timeout S] [--metaschedule-threads [T ...]]`` (``--targets cpu`` re-times the CPU parts (a) to
(c) alone, on a machine otherwise idle; ``--targets metaschedule`` re-times part (c) alone,
without our kernels' columns; a partial run writes ``results/tuning_{targets}.json``, never
``results/tuning.json``).
"""

from __future__ import annotations

import argparse
import math
import os
import statistics

import _harness  # noqa: F401  (puts the repository on sys.path)
import _metaschedule
import numpy as np
import torch
from _harness import best_of, cpu_name, report
from cpu_ops import _blocked, _blocked_kernel
from threadpoolctl import threadpool_limits

from compiler import build, te
from compiler.accel import Env
from compiler.accel.templates import RESNET18_LAYERS, ConvLayer
from compiler.codegen import Target
from compiler.templates import CONV2D_NCHWC, MATMUL, nchwc_block
from compiler.tune import (
    MeasureOptions,
    RandomTuner,
    Record,
    Result,
    Space,
    Task,
    Worker,
    XGBTuner,
    conv_layer_task,
)
from isa import AccelConfig

CPU_CONVS = [
    ("conv 28x28 128->128", 128, 28),
    ("conv 14x14 256->256", 256, 14),
    ("conv 7x7 512->512", 512, 7),
]
#: Accelerator layers small enough to measure whole (part a).
ACCEL_SEARCH = (
    ConvLayer("8x8 16->64 3x3", 8, 16, 64, 3, 1, 1, 0),
    ConvLayer("8x8 32->32 3x3", 8, 32, 32, 3, 1, 1, 0),
    ConvLayer("14x14 16->32 1x1", 14, 16, 32, 1, 1, 0, 0),
)
#: ResNet-18 layers tuned in part (d).
ACCEL_LAYERS = ("C6", "C11", "C12")
ACCEL_COLUMNS = ["layer", "space", "default cycles", "tuned cycles", "speed-up"]
VERSUS_COLUMNS = ["workload", "threads", "ours GFLOP/s", "peer", "peer GFLOP/s", "ours/peer"]
METASCHEDULE_COLUMNS = [
    "workload",
    "threads",
    "trials",
    "ours GFLOP/s",
    "MetaSchedule GFLOP/s",
    "ours/MetaSchedule",
    "MetaSchedule trials",
    "MetaSchedule tuning s",
]
SEARCH_COLUMNS = [
    "target",
    "workload",
    "space",
    "best found",
    "random trials",
    "xgb trials",
    "xgb/random",
    "xgb warm trials",
    "warm/random",
    "failed",
]
WITHIN = 1.05
BATCH = 8
#: XGBoost trials at 2 threads per CPU convolution in part (b).
THREAD_TRIALS = 16


class Memo:
    """Measurements shared by every tuner of one task: index -> cost (inf for a failure)."""

    def __init__(self, space: Space, worker: Worker, options: MeasureOptions) -> None:
        self.space, self.worker, self.options = space, worker, options
        self.costs: dict[int, float] = {}

    def __call__(self, index: int) -> float:
        if index not in self.costs:
            config = self.space.config(index)
            self.costs[index] = self.worker.measure(self.space.task, config, self.options).cost
        return self.costs[index]


def run_tuner(tuner, memo: Memo, budget: int) -> list[float]:
    """The costs of the candidates ``tuner`` picks, in order, up to ``budget`` of them."""
    seen: list[float] = []
    while len(seen) < budget:
        batch = tuner.next_batch(min(BATCH, budget - len(seen)))
        if not batch:
            break
        costs = [memo(i) for i in batch]
        results = [
            Result(costs=(c,)) if math.isfinite(c) else Result(error="timeout") for c in costs
        ]
        tuner.update(batch, results)
        seen += costs
    return seen


def trials_to(costs: list[float], best: float) -> int | None:
    return next((k + 1 for k, c in enumerate(costs) if c <= best * WITHIN), None)


def _mean_trials(runs: list[list[float]], best: float) -> float:
    """Mean trials to reach ``best`` within 5%, a run that never does counting its length+1."""
    return statistics.mean(trials_to(r, best) or len(r) + 1 for r in runs)


def cpu_conv_task(channels: int, size: int) -> Task:
    """A 3x3 convolution in the NCHWc layout, blocked as the CPU target wants."""
    block = nchwc_block(channels, out_width=size)
    groups = channels // block
    data = te.placeholder((1, groups, size, size, block), name="data")
    kernel = te.placeholder((groups, groups, 3, 3, block, block), name="kernel")
    return Task.of(CONV2D_NCHWC, data, kernel, stride=1, padding=1)


def _exhaustive(space: Space, memo: Memo) -> float:
    """Measure every valid candidate; the best cost."""
    for index in space:
        if space.valid(index):
            memo(index)
    return min(memo.costs.values())


def cpu_search_rows(worker: Worker) -> tuple[list, dict]:
    """Part (a) on the CPU: one row per convolution; also each space and its best candidate."""
    options = MeasureOptions(repeat=3, min_repeat_ms=20, threads=1, timeout=60)
    spaces = [(name, Space(cpu_conv_task(c, size))) for name, c, size in CPU_CONVS]
    memos = [Memo(space, worker, options) for _, space in spaces]
    rows = _search_group("cpu", "s", spaces, memos, random_seeds=10)
    winners = {
        name: (space, min(memo.costs, key=memo.costs.get))
        for (name, space), memo in zip(spaces, memos, strict=True)
    }
    return rows, winners


def accel_search_rows(worker: Worker, args) -> tuple[list, list]:
    """Part (a) on the accelerator: one row per layer; also every successful measurement as a
    record (for part (d))."""
    env = Env(AccelConfig.preset("default"))
    spaces = [(layer.name, Space(conv_layer_task(layer, env))) for layer in ACCEL_SEARCH]
    options = MeasureOptions(timeout=args.timeout)
    memos = [Memo(space, worker, options) for _, space in spaces]
    rows = _search_group("accel", "cycles", spaces, memos, random_seeds=20)
    return rows, [r for memo in memos for r in _records(memo)]


def _search_group(
    target: str, unit: str, spaces: list, memos: list[Memo], random_seeds: int
) -> list:
    """Rows of one target's workloads: each space measured whole, then random search, the
    XGBoost tuner cold and warm-started by the other workloads' records (leave one out)."""
    bests = [_exhaustive(space, memo) for (_, space), memo in zip(spaces, memos, strict=True)]
    rows = []
    for k, ((name, space), memo, best) in enumerate(zip(spaces, memos, bests, strict=True)):
        others = [r for j, m in enumerate(memos) if j != k for r in _records(m)]
        random = [run_tuner(RandomTuner(space, s), memo, len(space)) for s in range(random_seeds)]
        xgb = [run_tuner(XGBTuner(space, s), memo, len(space)) for s in range(3)]
        warm = [run_tuner(XGBTuner(space, s, transfer=others), memo, len(space)) for s in range(3)]
        failed = sum(not math.isfinite(c) for c in memo.costs.values())
        rows.append(_row(target, name, len(space), best, unit, random, xgb, warm, failed))
    return rows


def _records(memo: Memo) -> list[Record]:
    """The successful measurements of ``memo`` as tuning records."""
    space = memo.space
    return [
        Record.of(space.task, space.config(i), Result(costs=(c,)))
        for i, c in memo.costs.items()
        if math.isfinite(c)
    ]


def resnet_rows(worker: Worker, records: list, args) -> list:
    """Part (d): ResNet-18 layers, default knobs vs the best of the default and
    ``--accel-trials`` XGBoost trials warm-started by the records of (a)."""
    env = Env(AccelConfig.preset("default"))
    rows = []
    for layer in (la for la in RESNET18_LAYERS if la.name in ACCEL_LAYERS):
        task = conv_layer_task(layer, env)
        space = Space(task)
        memo = Memo(space, worker, MeasureOptions(timeout=args.timeout))
        default = memo(space.index(task.space().default()))
        run_tuner(XGBTuner(space, 0, transfer=records), memo, args.accel_trials)
        tuned = min(memo.costs.values())
        rows.append([layer.name, len(space), default, tuned, default / tuned])
        print("measured:", *rows[-1], flush=True)
    return rows


def _row(target, name, size, best, unit, random, xgb, warm, failed) -> list:
    """One row of part (a); ``failed``: the space's candidates that failed or timed out (they
    count as never good, so a timeout under load can change every figure of the row)."""
    r, x, w = (_mean_trials(runs, best) for runs in (random, xgb, warm))
    row = [target, name, size, f"{best:.4g} {unit}", r, x, x / r, w, w / r, failed]
    print("measured:", *row, flush=True)  # long runs: each row as it is done
    return row


def thread_winners(worker: Worker, space: Space, winner: int, trials: int = THREAD_TRIALS) -> dict:
    """The best candidate per thread count: at 1 thread ``winner``; at 2 the best of it, its
    parallel twin (the ``parallel`` knob, which cannot matter at 1 thread, switched on), the
    template's default for the target and ``trials`` XGBoost trials, all measured at 2
    threads."""
    memo = Memo(space, worker, MeasureOptions(repeat=3, min_repeat_ms=20, threads=2))
    memo(winner)
    memo(space.index(space.config(winner) | {"parallel": True}))
    memo(space.index(space.task.space().default()))
    run_tuner(XGBTuner(space, 0), memo, trials)
    return {1: winner, 2: min(memo.costs, key=memo.costs.get)}


def versus_rows(worker: Worker, winners: dict) -> list:
    """Part (b): the tuned CPU convolutions vs PyTorch."""
    rng = np.random.default_rng(0)
    rows = []
    for name, channels, size in CPU_CONVS:
        space, winner = winners[name]
        picks = thread_winners(worker, space, winner)
        rows += _conv_versus(rng, name, channels, size, space, picks)
    return rows


def _conv_versus(rng, name: str, channels: int, size: int, space: Space, picks: dict) -> list:
    x = rng.standard_normal((1, channels, size, size), dtype=np.float32)
    w = rng.standard_normal((channels, channels, 3, 3), dtype=np.float32)
    block = space.task.inputs[0].shape[-1]
    xb, wb = _blocked(x, block), _blocked_kernel(w, block)
    xt, wt = torch.from_numpy(x), torch.from_numpy(w)
    flops = 2.0 * channels * channels * 9 * size * size
    rows = []
    for threads, index in picks.items():
        schedule, args = space.task.declare(space.config(index))
        kernel = build(schedule, args)
        out = np.zeros(tuple(args[-1].shape), np.float32)
        # Ours first, the peer's reference on one thread: a peer's threads spin for a while
        # after its calls, and ours timed on several threads beside them do not scale.
        torch.set_num_threads(1)
        with torch.no_grad():
            expected = torch.nn.functional.conv2d(xt, wt, padding=1).numpy()
        kernel(xb, wb, out, num_threads=threads)
        got = out.transpose(0, 1, 4, 2, 3).reshape(expected.shape)
        np.testing.assert_allclose(got, expected, rtol=1e-3, atol=1e-2)
        ours = best_of(lambda k=kernel, o=out, t=threads: k(xb, wb, o, num_threads=t))
        torch.set_num_threads(threads)
        with torch.no_grad():
            peer = best_of(lambda: torch.nn.functional.conv2d(xt, wt, padding=1))
        rows.append([name, threads, flops / ours / 1e9, "pytorch", flops / peer / 1e9, peer / ours])
    return rows


def ours_trials(space: Space, threads: int) -> int:
    """The candidate measurements behind our kernel at ``threads`` (1 or 2): the whole space at
    1 thread (part a); at 2 threads also the winner, its parallel twin, the default and
    ``THREAD_TRIALS`` XGBoost trials (part b; at most, as a pick measured before is not
    measured again)."""
    return len(space) + (0 if threads == 1 else 3 + THREAD_TRIALS)


def metaschedule_rows(versus: list, threads: list[int]) -> tuple[list, dict]:
    """Part (c): MetaSchedule on each CPU convolution at each of ``threads``, at our trial count
    (:func:`ours_trials`), next to our GFLOP/s in ``versus`` (part b; "-" where it has none). A
    layer whose MetaSchedule child fails gets a "failed: reason" row. Also what the rows need
    said: target, layout, TVM's version, the load average before and after."""
    if not _metaschedule.available():
        return [], {"note": "not measured: apache-tvm is not installed here"}
    ours = {(row[0], row[1]): row[2] for row in versus}
    mcpu = Target.host().cpu
    load_before, rows, versions = os.getloadavg(), [], set()
    for count in threads:
        for name, channels, size in CPU_CONVS:
            trials = ours_trials(Space(cpu_conv_task(channels, size)), count)
            mine = ours.get((name, count), "-")
            try:
                got = _metaschedule.measure(channels, size, trials, count, mcpu)
            except _metaschedule.MetaScheduleError as error:
                row = [name, count, trials, mine, f"failed: {error}", "-", "-", "-"]
            else:
                versions.add(got["tvm"])
                ratio = mine / got["gflops"] if isinstance(mine, float) else "-"
                row = [name, count, trials, mine, got["gflops"], ratio, got["trials"]]
                row.append(got["tuning_s"])
            rows.append(row)
            print("measured:", *row, flush=True)  # minutes per layer: each row as it is done
    return rows, {
        "target": f"llvm -mcpu={mcpu} ({cpu_name()})",
        "layout": _metaschedule.LAYOUT,
        "tvm": sorted(versions),
        "load_average_before_after": (load_before, os.getloadavg()),
    }


def matmul_rows(worker: Worker, n: int = 512, trials: int = 32) -> list:
    a_t, b_t = te.placeholder((n, n), name="A"), te.placeholder((n, n), name="B")
    space = Space(Task.of(MATMUL, a_t, b_t))
    memo = Memo(space, worker, MeasureOptions(repeat=3, min_repeat_ms=20, threads=1))
    run_tuner(XGBTuner(space, 0), memo, trials)
    picks = thread_winners(worker, space, min(memo.costs, key=memo.costs.get), trials // 2)
    rng = np.random.default_rng(1)
    a = rng.standard_normal((n, n), dtype=np.float32)
    b = rng.standard_normal((n, n), dtype=np.float32)
    c = np.zeros((n, n), np.float32)
    rows = []
    for threads, index in picks.items():
        schedule, args = space.task.declare(space.config(index))
        kernel = build(schedule, args)
        with threadpool_limits(limits=1):  # as for the convolutions: ours first
            expected = a @ b
        kernel(a, b, c, num_threads=threads)
        np.testing.assert_allclose(c, expected, rtol=1e-3, atol=1e-2)
        ours = best_of(lambda k=kernel, t=threads: k(a, b, c, num_threads=t))
        with threadpool_limits(limits=threads):
            peer = best_of(lambda: a @ b)
        flops = 2.0 * n**3
        rows.append(
            [
                f"matmul {n}^3 ({trials} xgb trials)",
                threads,
                flops / ours / 1e9,
                "numpy",
                flops / peer / 1e9,
                peer / ours,
            ]
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--accel-trials", type=int, default=24, help="per tuner and layer")
    parser.add_argument("--timeout", type=float, default=4.0, help="seconds per accel candidate")
    parser.add_argument(
        "--targets",
        choices=("cpu", "accel", "metaschedule", "both"),
        default="both",
        help="cpu: parts (a) to (c) on the CPU; accel: parts (a) and (d); metaschedule: part "
        "(c) alone; both (default)",
    )
    parser.add_argument(
        "--metaschedule-threads",
        type=int,
        nargs="*",
        choices=(1, 2),
        default=[1, 2],
        help="thread counts of part (c); none: skip it (--targets cpu then re-times (a), (b))",
    )
    args = parser.parse_args()
    search, versus, accel, meta = [], [], [], []
    meta_note: dict = {"note": "not measured: --targets accel or no --metaschedule-threads"}
    worker = Worker()
    try:
        if args.targets in ("cpu", "both"):
            rows, winners = cpu_search_rows(worker)
            search += rows
            versus = versus_rows(worker, winners) + matmul_rows(worker)
        if args.targets in ("cpu", "metaschedule", "both") and args.metaschedule_threads:
            meta, meta_note = metaschedule_rows(versus, args.metaschedule_threads)
        if args.targets in ("accel", "both"):
            rows, records = accel_search_rows(worker, args)
            search += rows
            accel = resnet_rows(worker, records, args)
    finally:
        worker.close()
    report(
        "tuning"
        if args.targets == "both"
        else f"tuning_{args.targets}",  # never a partial tuning.json
        SEARCH_COLUMNS,
        search,
        cpu=cpu_name(),
        within=WITHIN,
        targets=args.targets,
        versus_columns=VERSUS_COLUMNS,
        versus=versus,
        accel_columns=ACCEL_COLUMNS,
        accel=accel,
        metaschedule_columns=METASCHEDULE_COLUMNS,
        metaschedule=meta,
        metaschedule_about=meta_note,
    )
    if versus:
        _print("tuned vs peers", VERSUS_COLUMNS, versus)
        for threads in (1, 2):
            convs = [r[-1] for r in versus if r[0].startswith("conv") and r[1] == threads]
            print(
                f"{threads} thread(s): geomean tuned conv / PyTorch "
                f"{math.prod(convs) ** (1 / len(convs)):.2f}x (target >= 1.0x)"
            )
    if meta:
        _print("tuned vs MetaSchedule at the same trial count", METASCHEDULE_COLUMNS, meta)
    if accel:
        _print("ResNet-18 on the accelerator: tuned vs default knobs", ACCEL_COLUMNS, accel)
    print(f"MetaSchedule: {meta_note}")
    print(f"CPU: {cpu_name()}")


def _print(title: str, columns: list[str], rows: list) -> None:
    print(f"== {title}")
    for row in [columns, *rows]:
        print("  ".join(f"{v:.3g}" if isinstance(v, float) else str(v) for v in row))


if __name__ == "__main__":
    main()
