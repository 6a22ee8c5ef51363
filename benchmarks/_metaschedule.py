"""TVM's MetaSchedule on one of ``tuning.py``'s CPU convolutions, in a process of its own.

The layer is a 3x3 convolution, ``channels`` -> ``channels`` at ``size`` x ``size``, stride 1,
pad 1, float32, batch 1 (``tuning.CPU_CONVS``). MetaSchedule gets it in NHWC with HWIO weights
(TOPI's ``conv2d_nhwc`` as ``te.create_prim_func``): the layout of MetaSchedule's own CPU
convolution workloads, where the output channels are innermost, so its multi-level tiling
vectorises them and needs no layout of our making. As for our NCHWc kernel, the layout change
of data and weights is done once outside the timed call and the padding is inside it.

``tune_tir`` (``tvm.s_tir.meta_schedule``; evolutionary search, XGBoost cost model, seed 0)
spends ``trials`` measurements, each timed as our tuner times its candidates (3 repeats of at
least 20 ms), at ``threads`` threads (``TVM_NUM_THREADS`` and the target's ``num-cores``).
The best schedule is then built, its output checked against PyTorch's conv2d and timed by
``_harness.best_of``. The target is ``llvm`` with ``mcpu`` the host CPU name as the project's
CPU target detects it (``compiler.codegen.Target.host().cpu``, which the caller passes in: this
process never loads llvmlite).

TVM runs here, never in the harness: its bundled LLVM and llvmlite's in one process may clash,
and a crash of TVM must not end the harness. :func:`measure` runs this file as a child and
raises :class:`MetaScheduleError` with the reason when it fails; the child prints one JSON
object (:func:`measure`'s result) as its last line of output.

Run alone: ``python benchmarks/_metaschedule.py --channels 128 --size 28 --trials 64
--threads 1 --mcpu znver1``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

__all__ = ["LAYOUT", "MetaScheduleError", "available", "measure"]

#: The layout MetaSchedule tunes (data, weights).
LAYOUT = "NHWC, HWIO"
#: Seconds a build may take. TVM's default, 30, is less than a fresh builder process spends on
#: its first build (importing TVM's tensor intrinsics, a minute on a loaded 2-core host), so
#: every build of a run failed with it.
BUILD_TIMEOUT = 600.0


class MetaScheduleError(RuntimeError):
    """The child failed: TVM raised, the output was wrong, it was killed or it ran too long."""


def available() -> bool:
    """Whether apache-tvm is installed (without importing it into this process)."""
    return importlib.util.find_spec("tvm") is not None


def measure(
    channels: int, size: int, trials: int, threads: int, mcpu: str, timeout: float = 1800.0
) -> dict:
    """MetaSchedule on one layer, in a child process.

    Returns ``{"gflops", "trials", "tuning_s", "mcpu", "layout", "tvm"}``: the best schedule's
    GFLOP/s, the measurements MetaSchedule recorded, the wall seconds ``tune_tir`` took (TVM's
    start-up in it: about a minute on a loaded 2-core host), the target CPU, :data:`LAYOUT` and
    TVM's version. Raises :class:`MetaScheduleError` with the child's reason (its last line of
    error output) when it fails or outlives ``timeout`` s.
    """
    command = [sys.executable, __file__, "--channels", str(channels), "--size", str(size)]
    command += ["--trials", str(trials), "--threads", str(threads), "--mcpu", mcpu]
    # a session of its own: on a timeout, TVM's builder and runner workers go with the child
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    ) as child:
        try:
            stdout, stderr = child.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, signal.SIGKILL)
            child.communicate()
            raise MetaScheduleError(f"timed out after {timeout:.0f} s") from None
    if child.returncode != 0:
        lines = [line for line in stderr.splitlines() if line.strip()]
        reason = lines[-1].strip() if lines else f"exit status {child.returncode}"
        if child.returncode < 0:
            reason = f"killed by signal {-child.returncode} ({reason})"
        raise MetaScheduleError(reason)
    try:
        return json.loads(stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        raise MetaScheduleError(f"no result in the child's output: {stdout[-200:]!r}") from None


def _tune(channels: int, size: int, trials: int, threads: int, mcpu: str) -> dict:
    """The child's work (TVM imported here, after ``TVM_NUM_THREADS`` is set)."""
    os.environ["TVM_NUM_THREADS"] = str(threads)
    import numpy as np
    import tvm
    from _harness import best_of
    from tvm import te, topi
    from tvm.s_tir import meta_schedule as ms

    data = te.placeholder((1, size, size, channels), name="data")
    weight = te.placeholder((3, 3, channels, channels), name="weight")
    out = topi.nn.conv2d_nhwc(data, weight, 1, 1, 1)
    func = te.create_prim_func([data, weight, out])
    target = tvm.target.Target({"kind": "llvm", "mcpu": mcpu, "num-cores": threads})
    evaluator = ms.runner.EvaluatorConfig(number=1, repeat=3, min_repeat_ms=20)
    with tempfile.TemporaryDirectory(prefix="metaschedule-") as work_dir:
        start = time.perf_counter()
        database = ms.tune_tir(
            func,
            target,
            work_dir,
            max_trials_global=trials,
            num_trials_per_iter=min(64, trials),
            builder=ms.builder.LocalBuilder(timeout_sec=BUILD_TIMEOUT),
            runner=ms.runner.LocalRunner(evaluator_config=evaluator),
            seed=0,
        )
        tuning_s = time.perf_counter() - start
        recorded = len(database.get_all_tuning_records())
        schedule = ms.tir_integration.compile_tir(database, func, target)
    if schedule is None:
        raise MetaScheduleError(f"no valid schedule in {recorded} trials")
    kernel = tvm.compile(schedule.mod, target=target)
    # torch after tuning: TVM parses its tensor intrinsics on first use through inspect.stack(),
    # which takes longer with every module loaded (a minute already without torch)
    import torch

    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, channels, size, size), dtype=np.float32)
    w = rng.standard_normal((channels, channels, 3, 3), dtype=np.float32)
    with torch.no_grad():
        expected = torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(w), padding=1)
    device = tvm.cpu()
    args = [
        tvm.runtime.tensor(np.ascontiguousarray(x.transpose(0, 2, 3, 1)), device),
        tvm.runtime.tensor(np.ascontiguousarray(w.transpose(2, 3, 1, 0)), device),
        tvm.runtime.tensor(np.zeros((1, size, size, channels), np.float32), device),
    ]
    kernel(*args)
    got = args[-1].numpy().transpose(0, 3, 1, 2)
    np.testing.assert_allclose(got, expected.numpy(), rtol=1e-3, atol=1e-2)
    seconds = best_of(lambda: kernel(*args))
    flops = 2.0 * channels * channels * 9 * size * size
    return {
        "gflops": flops / seconds / 1e9,
        "trials": recorded,
        "tuning_s": tuning_s,
        "mcpu": mcpu,
        "layout": LAYOUT,
        "tvm": tvm.__version__,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--channels", type=int, required=True, help="input = output channels")
    parser.add_argument("--size", type=int, required=True, help="height = width")
    parser.add_argument("--trials", type=int, required=True, help="MetaSchedule's budget")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--mcpu", required=True, help="LLVM CPU name (Target.host().cpu)")
    args = parser.parse_args()
    result = _tune(args.channels, args.size, args.trials, args.threads, args.mcpu)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
