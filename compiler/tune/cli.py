"""``vtaforge tune``: tune one operator (``--op``, ``--shape``) or every accelerator operator of
an ONNX model, appending the trials to a records file (registered through the
``vtaforge.commands`` entry point, as ``vtaforge compile`` is)."""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from compiler.cli import add_calibration_option, calibration_samples
from compiler.tune.errors import RecordWarning, TuneError
from isa import AccelConfig
from runtime.cli import Command, LazyChoices, progress_bar

if TYPE_CHECKING:
    from compiler.tune.driver import TuneResult
    from compiler.tune.task import Task

__all__ = ["TUNE", "op_task"]

_SHAPES = {
    "matmul": "M,N,K",
    "conv2d": "N,C,H,W,O,KERNEL[,STRIDE[,PADDING]] (square kernel; NCHWc on the CPU)",
}


def _configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", nargs="?", type=Path, metavar="MODEL.onnx")
    parser.add_argument("--op", choices=sorted(_SHAPES), help="tune one operator instead")
    parser.add_argument("--shape", help="; ".join(f"{k}: {v}" for k, v in _SHAPES.items()))
    parser.add_argument(
        "--target",
        choices=("llvm", "accel"),
        default="accel",
        help="llvm: this CPU, timed; accel (default): cycles of the cycle-level simulator",
    )
    parser.add_argument("--config", default="default", metavar="PRESET|FILE", help="accel's")
    add_calibration_option(parser)  # the model's, as `vtaforge compile` takes it
    parser.add_argument("--trials", type=int, required=True, help="measured candidates per task")
    parser.add_argument("--records", type=Path, required=True, metavar="FILE.jsonl")
    parser.add_argument(
        "--tuner",
        choices=LazyChoices(_tuners),
        default="xgb",
        metavar="TUNER",
        help="%(choices)s (default %(default)s)",
    )
    parser.add_argument("--batch", type=int, default=8, help="candidates per tuner batch")
    parser.add_argument("--timeout", type=float, default=20.0, help="seconds per candidate")
    parser.add_argument(
        "--scheduler", metavar="ADDRESS", help="measure on this dask.distributed scheduler"
    )
    parser.epilog = (
        "Runs that find their records file already holding trials of a task go on from there. "
        "Compile with the best knobs inside compiler.tune.apply_history_best(FILE)."
    )


def _tuners() -> list[str]:
    """The tuners' names (read when a --tuner value is checked or the command's help shown)."""
    from compiler.tune.tuners import TUNERS

    return sorted(TUNERS)


def _ints(text: str | None, op: str) -> list[int]:
    try:
        return [int(v) for v in (text or "").split(",")]
    except ValueError:
        raise TuneError(f"--shape {text!r} is not {_SHAPES[op]}", where="--shape") from None


def op_task(op: str, shape: str | None, target: str, cfg: AccelConfig) -> Task:
    """The task of ``--op OP --shape SHAPE`` for ``target`` (``llvm`` or ``accel``); a
    TuneError for extents that are not positive or a kernel that does not fit the input."""
    from compiler import te
    from compiler.accel.env import Env
    from compiler.accel.templates import ConvLayer
    from compiler.templates import CONV2D_NCHWC, MATMUL, nchwc_block, out_size
    from compiler.tune.task import Task, check_positive, check_window, conv_layer_task

    values = _ints(shape, op)
    if op == "matmul" and len(values) == 3 and target == "llvm":
        m, n, k = values
        check_positive("--shape", M=m, N=n, K=k)
        return Task.of(MATMUL, te.placeholder((m, k), name="A"), te.placeholder((k, n), name="B"))
    if op == "conv2d" and 6 <= len(values) <= 8:
        batch, cin, height, width, cout, kernel, *rest = values
        stride = rest[0] if rest else 1
        padding = rest[1] if len(rest) > 1 else kernel // 2
        check_positive("--shape", N=batch, C=cin, O=cout)
        for size in (height, width):
            check_window(size, kernel, stride, padding, where="--shape")
        if target == "accel":
            if batch != 1 or height != width:
                raise TuneError("accel conv2d takes batch 1 and a square input", where="--shape")
            layer = ConvLayer("conv", height, cin, cout, kernel, stride, padding, 0)
            return conv_layer_task(layer, Env(cfg))
        out_width = out_size(width, kernel, stride, padding)
        ib, ob = nchwc_block(cin), nchwc_block(cout, out_width=out_width)
        data = te.placeholder((batch, cin // ib, height, width, ib), name="data")
        weights = te.placeholder((cout // ob, cin // ib, kernel, kernel, ib, ob), name="kernel")
        return Task.of(CONV2D_NCHWC, data, weights, stride=stride, padding=padding)
    raise TuneError(f"--op {op} --target {target} takes --shape {_SHAPES[op]}", where="--shape")


def _tasks(args: argparse.Namespace, cfg: AccelConfig) -> list[Task]:
    if (args.model is None) == (args.op is None):
        raise TuneError("give either MODEL.onnx or --op (with --shape)", where="vtaforge tune")
    if args.op is not None:
        return [op_task(args.op, args.shape, args.target, cfg)]
    if args.target != "accel":
        raise TuneError("a model is tuned for --target accel", where="--target")
    from compiler.frontend import from_onnx
    from compiler.tune.task import model_tasks

    graph = from_onnx(args.model)
    return model_tasks(graph, cfg, calibration=calibration_samples(graph, args.calibrate))


def _run(args: argparse.Namespace) -> int:
    """Tune every task; a TuneError after the last one when some task had no successful
    trial. Skipped record lines are warnings on stderr."""
    from compiler.tune.driver import tune
    from compiler.tune.measure import MeasureOptions

    options = MeasureOptions(timeout=args.timeout)
    cfg = AccelConfig.resolve(args.config)
    tasks = _tasks(args, cfg)
    client = None
    if args.scheduler:
        from dask.distributed import Client

        client = Client(args.scheduler)
    failed = []
    with _warning_of_skipped_lines():
        for number, task in enumerate(tasks, start=1):
            unit = "cycles" if task.cfg is not None else "s"
            with progress_bar(args.trials, "trial") as advance:
                result = tune(
                    task,
                    trials=args.trials,
                    tuner=args.tuner,
                    records=args.records,
                    options=options,
                    batch=args.batch,
                    client=client,
                    progress=lambda done, total, best, u=unit: advance(f"best {best:.4g} {u}"),
                )
            print(f"[{number}/{len(tasks)}] {task.name}: {_outcome(result, unit)}")
            if result.best[0] is None:
                failed.append(f"{task.name} ({_failure(result)})")
    if client is not None:
        client.close()
    if failed:
        raise TuneError(f"no trial succeeded for {'; '.join(failed)}")
    return 0


def _outcome(result: TuneResult, unit: str) -> str:
    """What one task's run found, as its line of the output says it."""
    knobs, cost = result.best
    trials = f"after {len(result.trials)} trials ({result.errors} errors)"
    if knobs is None:
        return f"no trial succeeded {trials}: {_failure(result)}"
    return f"best {cost:.4g} {unit} {trials}: {knobs}"


def _failure(result: TuneResult) -> str:
    """Why a run without a successful trial has none."""
    if not result.trials:
        return "the space holds no candidate the template accepts"
    last = result.trials[-1][1]
    lines = last.message.strip().splitlines()
    return f"the last failed with {last.error}" + (f": {lines[-1]}" if lines else "")


@contextmanager
def _warning_of_skipped_lines() -> Iterator[None]:
    """Within the block, each distinct :class:`RecordWarning` is one line on stderr
    (``vtaforge tune: warning: FILE:LINE: ...``); other warnings are shown as before."""
    shown: set[str] = set()
    previous = warnings.showwarning

    def show(message: Warning | str, category: type[Warning], *rest: Any, **more: Any) -> None:
        if not issubclass(category, RecordWarning):
            previous(message, category, *rest, **more)
        elif str(message) not in shown:
            shown.add(str(message))
            print(f"vtaforge tune: warning: {message}", file=sys.stderr)

    with warnings.catch_warnings():
        warnings.simplefilter("always", RecordWarning)
        warnings.showwarning = show
        yield


#: ``vtaforge tune (MODEL.onnx | --op OP --shape ...) --target llvm|accel --trials N
#: --records FILE [--scheduler ADDRESS]``.
TUNE = Command("tune", "auto-tune operator knobs (AutoTVM-style)", _configure, _run)
