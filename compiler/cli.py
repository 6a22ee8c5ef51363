"""``vtaforge compile``: the compiler's subcommand, registered with the command line through the
``vtaforge.commands`` entry point (``runtime`` never imports ``compiler``; see
``runtime.cli.PLUGIN_GROUP``)."""

from __future__ import annotations

import argparse
import contextlib
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from compiler.errors import GraphError, UnknownInputShape
from isa import AccelConfig
from isa.files import FileFormat, UserFileError, check_file, read_npy, read_npz
from runtime.cli import Command, LazyChoices, progress_bar
from runtime.cli.common import CliError, check_output_file, writing

if TYPE_CHECKING:
    from compiler.graph.ir import Graph
    from compiler.pipeline import Instrument, PassTiming

__all__ = [
    "COMPILE",
    "ONNX_MODEL",
    "add_calibration_option",
    "calibration_samples",
    "read_onnx",
]

_RANDOM_SAMPLES = 4
#: An ONNX model (``compile``, ``tune``): 2 GiB, protobuf's limit on one message.
ONNX_MODEL = FileFormat("ONNX model", 2 << 30)


def _configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", type=Path, metavar="MODEL.onnx")
    parser.add_argument(
        "--config", default="default", metavar="PRESET|FILE", help="the accelerator's"
    )
    add_calibration_option(parser)
    parser.add_argument(
        "--input-shape",
        action="append",
        default=[],
        type=_input_shape,
        metavar="NAME=D,D,...",
        help="fix an input's shape (repeatable): needed for every input with dynamic dimensions",
    )
    parser.add_argument(
        "--cpu-only",
        action="append",
        default=[],
        metavar="NODE",
        help="keep a node of the quantized graph off the accelerator (repeatable)",
    )
    parser.add_argument(
        "--keep-float",
        action="append",
        default=[],
        metavar="NODE",
        help="leave a node in float, on the CPU (repeatable)",
    )
    parser.add_argument(
        "--calibration-method",
        default="mse",
        type=_calibration_method,
        metavar="METHOD",
        help="how each activation's range is chosen from the calibration samples: "
        + _CALIBRATION_CHOICES
        + " (default: mse)",
    )
    parser.add_argument(
        "--quant-scheme",
        default="pow2",
        choices=LazyChoices(_schemes),
        metavar="SCHEME",
        help="how weights are quantized: pow2 (power-of-two scales per tensor, requantised by a "
        "shift, VTA's; the default) or per-channel (a real scale per output channel, "
        "requantised by a fixed-point multiply and shift on the ALU)",
    )
    parser.add_argument(
        "--target",
        default="accel",
        metavar="accel|llvm",
        help="accel (default): int8 on the accelerator, CPU steps where the partition leaves "
        "them; llvm: the whole model in float32 on the CPU (LLVM kernels built by the host "
        "that runs it), no calibration; 'llvm -mcpu=CPU -mattr=...' lays out the weights for "
        "that CPU rather than this one",
    )
    parser.add_argument(
        "--tuning-records",
        type=Path,
        metavar="FILE.jsonl",
        help="records of vtaforge tune: each accelerator template takes its task's best "
        "knobs (templates without a record keep their defaults)",
    )
    parser.add_argument("-o", "--output", type=Path, required=True, metavar="MODEL.vtaf")
    parser.add_argument("--report", action="store_true", help="print the partition report")
    parser.add_argument(
        "--quant-report",
        action="store_true",
        help="print how each int8 value was scaled: observed range, threshold, scale, the "
        "fraction of calibration elements clipped",
    )
    parser.add_argument(
        "--time-passes",
        action="store_true",
        help="print every stage's and lowering pass's calls and seconds, as a tree",
    )
    parser.add_argument(
        "--dump-ir",
        type=Path,
        metavar="DIR",
        help="write the IR after every stage and lowering pass into DIR, one numbered file each",
    )
    parser.add_argument(
        "--verify-ir",
        action="store_true",
        help="check the loop IR after every lowering pass (bound variables, allocated buffers, "
        "positive extents)",
    )
    parser.epilog = (
        "Compiles an ONNX model for the accelerator (quantized to int8 with power-of-two scales) "
        "into one file that `vtaforge run` executes."
    )


#: The calibration methods as ``--help`` lists them (the registry's, with their parameters).
_CALIBRATION_CHOICES = (
    "max (min-max), percentile[:P] (the P-th percentile of |x|, default 99.99), "
    "mse (least squared error), entropy[:BINS] (least KL divergence, default 2048 bins)"
)


def _schemes() -> list[str]:
    """The quantization schemes' names (read when --quant-scheme is checked or shown)."""
    from compiler.graph.passes.quantize import SCHEMES

    return list(SCHEMES)


def _calibration_method(text: str) -> str:
    """``--calibration-method`` checked against the registry (a usage error otherwise)."""
    from compiler.graph.passes.calibrate import calibration_method

    try:
        return calibration_method(text).spec
    except GraphError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _input_shape(text: str) -> tuple[str, tuple[int, ...]]:
    """``NAME=1,3,224,224`` as (name, shape)."""
    name, sep, dims = text.rpartition("=")
    try:
        shape = tuple(int(d) for d in dims.split(","))
    except ValueError:
        shape = ()
    if not sep or not name or not shape or min(shape) < 1:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not NAME=D,D,... with positive dimensions (e.g. x=1,3,224,224)"
        )
    return name, shape


def read_onnx(path: Path, shapes: list[tuple[str, tuple[int, ...]]]) -> Graph:
    """The graph of the ONNX file ``path`` (a regular file within :data:`ONNX_MODEL`'s limit)
    with ``--input-shape`` values ``shapes``, its size checked (:func:`check_graph_size`)
    before anything runs; an input whose shape is not fixed is an error naming the flag."""
    from compiler.frontend import from_onnx
    from compiler.graph.limits import check_graph_size

    given = dict(shapes)
    if len(given) != len(shapes):
        raise GraphError("--input-shape names an input twice")
    check_file(path, ONNX_MODEL)  # ONNX reads the path itself (and external data beside it)
    try:
        graph = from_onnx(path, input_shapes=given)
    except UnknownInputShape as err:
        where = f"dimension {err.axis} is not fixed" if err.axis else "its shape is not given"
        raise UnknownInputShape(
            f"{where}: give its shape with --input-shape {err.tensor}=D,D,...",
            tensor=err.tensor,
            axis=err.axis,
        ) from None
    check_graph_size(graph)
    return graph


def add_calibration_option(parser: argparse.ArgumentParser) -> None:
    """``--calibrate DATA.npz``, as every command that quantizes a model takes it (read by
    :func:`calibration_samples`)."""
    parser.add_argument(
        "--calibrate",
        type=Path,
        metavar="DATA.npz",
        help="calibration samples: per model input (by name) an array whose first axis indexes "
        "the samples (a .npy for a single-input model); default: seeded random normal samples",
    )


def calibration_samples(graph: Graph, path: Path | None) -> list[dict[str, np.ndarray]]:
    """The calibration samples of ``--calibrate path`` for ``graph`` (one dict of input arrays
    per sample), or, without a path, the same seeded random samples every command uses (so
    ``vtaforge tune MODEL`` tunes the operators ``vtaforge compile MODEL`` builds)."""
    if path is None:
        rng = np.random.default_rng(0)
        return [
            {n: rng.standard_normal(graph.types[n].shape).astype(np.float32) for n in graph.inputs}
            for _ in range(_RANDOM_SAMPLES)
        ]
    arrays = {graph.inputs[0]: read_npy(path)} if path.suffix == ".npy" else read_npz(path)
    missing = [n for n in graph.inputs if n not in arrays]
    if missing:
        raise GraphError(f"calibration data {path} has no array for input {missing[0]!r}")
    batches = {n: _samples_of(arrays[n], graph.types[n].shape, n) for n in graph.inputs}
    count = min(len(b) for b in batches.values())
    if not count:
        raise GraphError(f"calibration data {path} holds no samples")
    return [{n: batches[n][k] for n in graph.inputs} for k in range(count)]


def _real(array: np.ndarray, name: str) -> np.ndarray:
    """``array`` (calibration array ``name``) as float32, which it must hold: real numbers
    (bool, integer or float), every one finite in float32; raise GraphError naming the array
    otherwise, with no numpy warning printed."""
    if array.dtype.kind not in "biuf":
        raise GraphError(
            f"calibration array {name!r} holds {array.dtype} values: needs real numbers "
            f"(bool, integer or float)"
        )
    with np.errstate(all="ignore"):  # a value beyond float32 becomes inf: refused below
        values = array.astype(np.float32)
    bad = int(np.count_nonzero(~np.isfinite(values)))
    if bad:
        raise GraphError(
            f"calibration array {name!r} holds {bad:,} values that are NaN or infinite (or "
            f"beyond float32's range) among {values.size:,}"
        )
    return values


def _samples_of(array: np.ndarray, shape: tuple[int, ...], name: str) -> np.ndarray:
    """``array`` (calibration array ``name``, checked by :func:`_real`) as a float32 stack of
    samples of ``shape``: one sample of that shape, samples along a new first axis, or, for an
    input of batch 1, samples along the batch axis (an (N, C, H, W) array as users save a data
    set); a 0-d array or any other shape is a GraphError."""
    if array.shape == shape:
        return _real(array, name)[None]
    if array.ndim == 0:
        raise GraphError(
            f"calibration array {name!r} is a single number (0-d): needs samples of the "
            f"input's shape {list(shape)}"
        )
    if array.shape[1:] == shape:
        return _real(array, name)
    if shape and shape[0] == 1 and array.shape[1:] == shape[1:] and len(array):
        return _real(array, name)[:, None]
    raise GraphError(
        f"calibration array {name!r} has shape {list(array.shape)}: needs samples of the "
        f"input's shape {list(shape)} (stacked along a first axis)"
    )


def _tuned(records: Path | None, target: str) -> contextlib.AbstractContextManager[object]:
    """Within the block, the accelerator's templates take the best knobs of ``records`` (as
    ``with compiler.tune.apply_history_best(records): compile_model(...)`` does)."""
    if records is None:
        return contextlib.nullcontext()
    if target != "accel":
        raise CliError(
            "--tuning-records applies to the accelerator's templates (--target accel); a CPU "
            "model's kernels are built on the host that runs it"
        )
    if not records.is_file():
        raise UserFileError(f"--tuning-records {records}: no such file")
    from compiler.tune.records import apply_history_best  # reads and checks each line

    return apply_history_best(records)


def _run(args: argparse.Namespace) -> int:
    from compiler.model import STAGES, compile_model
    from compiler.pipeline import instrumented

    check_output_file(args.output, "-o")
    tuned = _tuned(args.tuning_records, args.target)  # checked before the model is read
    graph = read_onnx(args.model, args.input_shape)
    samples = calibration_samples(graph, args.calibrate)
    config = AccelConfig.resolve(args.config)
    timing, instruments = _instruments(args)
    with (
        _warnings_as_lines(),
        progress_bar(len(STAGES), "stage") as advance,
        instrumented(*instruments),
        tuned,
    ):
        compiled = compile_model(
            graph,
            config,
            calibration=samples,
            name=args.model.stem,
            progress=advance,
            cpu_only=args.cpu_only,
            keep_float=args.keep_float,
            calibration_method=args.calibration_method,
            target=args.target,
            scheme=args.quant_scheme,
        )
    with writing(args.output, "-o"):
        compiled.save(args.output)
    if args.report:
        print(compiled.partition.report())
    if args.quant_report:
        from compiler.graph.passes.calibrate import quantization_table

        print(quantization_table(compiled.quantization))
    if timing is not None:
        print(timing.report())
    parts = compiled.partition
    total = sum(compiled.stage_seconds.values())
    source = (
        "for the CPU in float32"
        if args.target.startswith("llvm")
        else f"from {len(samples)} calibration samples"
    )
    print(
        f"{args.output}: {len(compiled.image.steps)} steps ({parts.count('accel')} on the "
        f"accelerator) for {compiled.cfg.fingerprint}, {compiled.image.dram_bytes / 1e6:.1f} MB "
        f"of DRAM; compiled in {total:.1f} s {source}"
    )
    return 0


@contextlib.contextmanager
def _warnings_as_lines() -> Iterator[None]:
    """Each :class:`~compiler.errors.QuantizationWarning` raised inside as one line on stderr
    (``vtaforge compile: warning: ...``), once the block ends (the progress bar has closed);
    other warnings are shown as Python shows them."""
    from compiler.errors import QuantizationWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", QuantizationWarning)
        try:
            yield
        finally:
            shown = set()
            for w in caught:
                if not issubclass(w.category, QuantizationWarning):
                    warnings.showwarning(w.message, w.category, w.filename, w.lineno)
                elif str(w.message) not in shown:
                    shown.add(str(w.message))
                    print(f"vtaforge compile: warning: {w.message}", file=sys.stderr)


def _instruments(args: argparse.Namespace) -> tuple[PassTiming | None, list[Instrument]]:
    """The pass timing that ``--time-passes`` asks for (None without it), and every
    instrument the options ask for (``--dump-ir``, ``--verify-ir``)."""
    from compiler.loop_ir import LoweredFunc
    from compiler.pipeline import DumpIR, PassTiming, Verify
    from compiler.verify import verify_lowered

    timing = PassTiming() if args.time_passes else None
    instruments: list[Instrument] = [timing] if timing is not None else []
    if args.dump_ir is not None:
        instruments.append(DumpIR(args.dump_ir))
    if args.verify_ir:
        instruments.append(Verify(verify_lowered, lambda ir: isinstance(ir, LoweredFunc)))
    return timing, instruments


#: ``vtaforge compile MODEL.onnx --config PRESET [--calibrate DATA.npz]
#: [--calibration-method METHOD] -o MODEL.vtaf [--quant-report]``.
COMPILE = Command("compile", "compile an ONNX model for the accelerator", _configure, _run)
