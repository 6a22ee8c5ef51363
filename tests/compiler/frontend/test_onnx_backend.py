"""The ONNX frontend and the float reference against ONNX's own backend node test cases.

``onnx.backend.test.case.node.collect_testcases`` generates ONNX's conformance cases: one small
model per operator variant (attribute combinations, broadcasting, dtypes, opsets, and the
``_expanded`` function bodies of composite operators) with its inputs and expected outputs.
Every case whose nodes all use an operator of :data:`OPERATORS_IN_SCOPE` (default domain) and
whose inputs and outputs are tensors is imported with ``from_onnx`` and run with ``run_graph``.

ONNX's cases feed as graph inputs what vtaforge needs as constants at import (Reshape's shape,
a reduction's axes, Pad's pads, TopK's ``k``, Resize's sizes): shapes are static here. Where an
import is refused with an :class:`UnsupportedOperator` whose ``needs_constant`` names graph
inputs, the case is imported again with exactly those inputs bound to the data set's arrays
(``from_onnx(..., constants=...)``, as TVM's ``bind_params_by_name``), repeated while the
refusals name new inputs, and run with the remaining inputs fed; a refusal that names no new
input stands.

A case passes in one of two ways: its outputs match the expected ones (same dtype, same shape,
values within ``rtol=1e-3, atol=1e-4`` or the case's own looser tolerance; values of ml_dtypes'
narrow float types exactly, NaN matching NaN as in float comparisons), or importing or
running it raises a :class:`isa.VtaforgeError`, a typed refusal that names why (an attribute
value, a dtype or an operator outside the mapping). A wrong answer, or any other exception
(an ``IndexError`` or a numpy ``TypeError`` escaping a converter or kernel), fails. The counts
are not pinned, so the module keeps working as operators are added:
``python -m tests.compiler.frontend.test_onnx_backend`` prints how many cases of each operator
match and how many are refused.
"""

from __future__ import annotations

import functools
import warnings
from collections import Counter
from collections.abc import Sequence

import numpy as np
import onnx
import pytest
from onnx import numpy_helper
from onnx.backend.test.case.node import collect_testcases
from onnx.backend.test.case.test_case import TestCase

from compiler.errors import UnsupportedOperator
from compiler.frontend import from_onnx
from compiler.graph.interpret import run_graph
from compiler.graph.ir import Graph
from isa import VtaforgeError
from runtime.opset.base import NARROW_FLOATS

#: The operators whose backend cases are run (ONNX op types, default domain).
OPERATORS_IN_SCOPE: tuple[str, ...] = (
    "Abs", "Add", "And", "ArgMax", "AveragePool", "BatchNormalization", "Cast", "Clip", "Concat",
    "Constant", "ConstantOfShape", "Conv", "ConvTranspose", "DequantizeLinear", "Div", "Dropout",
    "Equal", "Erf", "Exp", "Expand", "Flatten", "Gather", "Gelu", "Gemm", "GlobalAveragePool",
    "Greater", "HardSigmoid", "HardSwish", "Identity", "LayerNormalization", "LeakyRelu", "Less",
    "Log", "MatMul", "Max", "MaxPool", "Min", "Mod", "Mul", "Neg", "Not", "Pad", "Pow",
    "QuantizeLinear", "Range", "Reciprocal", "ReduceMax", "ReduceMean", "ReduceSum", "Relu",
    "Reshape", "Resize", "Shape", "Sigmoid", "Slice", "Softmax", "Split", "Sqrt", "Squeeze", "Sub",
    "Tanh", "Tile", "TopK", "Transpose", "Unsqueeze", "Upsample", "Where",
)  # fmt: skip

#: The tolerances of the comparison (a case's own, when looser, wins).
RTOL = 1e-3
ATOL = 1e-4

#: The outcomes of a case; the first two pass.
MATCHED, TYPED, WRONG, UNTYPED = "matched", "typed", "wrong", "untyped"
PASSING = (MATCHED, TYPED)

_DEFAULT_DOMAINS = ("", "ai.onnx")


@functools.cache
def _all_cases() -> dict[str, TestCase]:
    """ONNX's node test cases by name (generating them warns about overflows: silenced)."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return {case.name: case for case in collect_testcases()}


def _is_tensor(value: onnx.ValueInfoProto) -> bool:
    return value.type.HasField("tensor_type")


def _in_scope(case: TestCase) -> bool:
    """Whether every node is an in-scope operator and every input and output a tensor."""
    graph = case.model.graph
    return (
        len(graph.node) > 0
        and all(
            node.domain in _DEFAULT_DOMAINS and node.op_type in OPERATORS_IN_SCOPE
            for node in graph.node
        )
        and all(_is_tensor(v) for v in [*graph.input, *graph.output])
    )


@functools.cache
def _onnx_op_types() -> dict[str, str]:
    """Every ONNX operator of the default domain, by its lowercase name."""
    return {
        s.name.lower(): s.name for s in onnx.defs.get_all_schemas_with_history() if not s.domain
    }


def operator_of(case: TestCase) -> str:
    """The operator a case tests: the longest ONNX op type spelled by the leading words of its
    name (``test_reduce_mean_...`` is ReduceMean) when the graph uses it or is the expanded
    function of it, else the op type of its first node (``test_constant_pad`` is Pad). Expanded
    functions of operators outside the scope are labelled ``"<op> (expanded)"``."""
    words = case.name.removeprefix("test_").split("_")
    known = _onnx_op_types()
    spelled = ["".join(words[: k + 1]) for k in range(len(words))]
    named = next((known[s] for s in reversed(spelled) if s in known), None)
    used = [node.op_type for node in case.model.graph.node]
    if named is not None and named in used:
        return named
    if named is not None and "_expanded" in case.name:
        return named if named in OPERATORS_IN_SCOPE else f"{named} (expanded)"
    return used[0]


@functools.cache
def cases_in_scope() -> dict[str, TestCase]:
    """The in-scope cases by name, sorted by name."""
    cases = _all_cases()
    return {name: cases[name] for name in sorted(cases) if _in_scope(cases[name])}


def _inputs(
    case: TestCase, arrays: Sequence[np.ndarray | onnx.TensorProto]
) -> dict[str, np.ndarray]:
    """The data set's input arrays by the model's (non-initializer) input names."""
    graph = case.model.graph
    initializers = {t.name for t in graph.initializer}
    names = [v.name for v in graph.input if v.name not in initializers]
    if len(names) != len(arrays):
        raise AssertionError(f"{case.name}: {len(arrays)} input arrays for inputs {names}")
    return {name: _array(a) for name, a in zip(names, arrays, strict=True)}


def _array(value: np.ndarray | onnx.TensorProto) -> np.ndarray:
    """A data set's array (one of a dtype that numpy lacks comes as a ``TensorProto``)."""
    if isinstance(value, onnx.TensorProto):
        return numpy_helper.to_array(value)
    return np.asarray(value)


def _mismatch(got: np.ndarray, expected: np.ndarray, rtol: float, atol: float) -> str | None:
    """Why ``got`` is not ``expected`` (None when it is)."""
    got = np.asarray(got)
    if got.dtype != expected.dtype:
        return f"dtype {got.dtype}, expected {expected.dtype}"
    if got.shape != expected.shape:
        return f"shape {got.shape}, expected {expected.shape}"
    try:
        if expected.dtype.kind in "fc":
            np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol)
        elif str(expected.dtype) in NARROW_FLOATS:  # exactly, NaN equal to NaN as for floats
            np.testing.assert_array_equal(got.astype(np.float64), expected.astype(np.float64))
        else:
            np.testing.assert_array_equal(got, expected)
    except AssertionError as err:
        lines = [line.strip() for line in str(err).splitlines() if line.strip()]
        return "; ".join(line for line in lines if line.startswith(("Mismatched", "Max")))
    return None


def import_binding(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> Graph:
    """``model``'s graph, binding as constants the graph inputs that its refusals name in
    ``needs_constant`` (to their arrays in ``feeds``) until none names a new one."""
    constants: dict[str, np.ndarray] = {}
    while True:
        shapes = {n: a.shape for n, a in feeds.items() if n not in constants}
        try:
            return from_onnx(model, input_shapes=shapes, constants=constants)
        except UnsupportedOperator as err:
            new = [n for n in err.needs_constant if n not in constants and n in feeds]
            if not new:
                raise
            constants.update((n, feeds[n]) for n in new)


def _untyped(err: Exception, stage: str) -> tuple[str, str]:
    text = " ".join(str(err).split())
    return UNTYPED, f"{stage}: {type(err).__name__}: {text[:200]}"


@functools.cache
def classify(name: str) -> tuple[str, str]:
    """The outcome of the in-scope case ``name`` (matched, typed, wrong or untyped) and its
    detail: the typed error's message, the mismatch or the untyped exception."""
    case = cases_in_scope()[name]
    rtol, atol = max(RTOL, case.rtol), max(ATOL, case.atol)
    for k, (arrays, expected) in enumerate(case.data_sets):
        feeds = _inputs(case, arrays)
        stage = "import"
        try:
            graph = import_binding(case.model, feeds)
            stage = "run"
            with np.errstate(all="ignore"):
                got = run_graph(graph, {n: feeds[n] for n in graph.inputs})
        except Exception as err:  # classified: typed refusals pass, anything else fails
            if isinstance(err, VtaforgeError):
                return TYPED, f"{stage}: {type(err).__name__}: {err}"
            return _untyped(err, stage)
        if len(got) != len(expected):
            return WRONG, f"data set {k}: {len(got)} outputs, expected {len(expected)}"
        for i, (out, want) in enumerate(zip(got, expected, strict=True)):
            why = _mismatch(out, _array(want), rtol, atol)
            if why is not None:
                return WRONG, f"data set {k}, output {i} ({graph.outputs[i]}): {why}"
    return MATCHED, ""


@pytest.mark.parametrize("name", list(cases_in_scope()))
def test_backend_case(name: str) -> None:
    outcome, detail = classify(name)
    assert outcome in PASSING, f"{outcome}: {detail}"


def summary() -> tuple[str, list[tuple[str, str, str, str]]]:
    """The Markdown table of outcomes per operator, and the failing cases as (operator, name,
    outcome, detail)."""
    counts: dict[str, Counter[str]] = {op: Counter() for op in OPERATORS_IN_SCOPE}
    failures: list[tuple[str, str, str, str]] = []
    for name, case in cases_in_scope().items():
        op = operator_of(case)
        outcome, detail = classify(name)
        counts.setdefault(op, Counter())[outcome] += 1
        if outcome not in PASSING:
            failures.append((op, name, outcome, detail))
    rows = ["| operator | matched | typed | total |", "|---|---:|---:|---:|"]
    totals: Counter[str] = Counter()
    for op in [*OPERATORS_IN_SCOPE, *sorted(set(counts) - set(OPERATORS_IN_SCOPE))]:
        c = counts[op]
        totals.update(c)
        rows.append(f"| {op} | {c[MATCHED]} | {c[TYPED]} | {c.total()} |")
    total = totals.total()
    rows.append(f"| **all** | {totals[MATCHED]} | {totals[TYPED]} | {total} |")
    fraction = totals[MATCHED] / total if total else 0.0
    rows += [
        "",
        f"{totals[MATCHED]} of {total} in-scope cases matched ({fraction:.1%}), "
        f"{totals[TYPED]} typed refusals, {totals[WRONG]} wrong, {totals[UNTYPED]} untyped.",
    ]
    return "\n".join(rows), failures


def test_backend_suite_summary() -> None:
    table, failures = summary()
    print(table)
    listed = "\n".join(
        f"{op}: {name}: {outcome}: {detail}" for op, name, outcome, detail in failures
    )
    assert not failures, f"{len(failures)} wrong or untyped cases:\n{listed}"


if __name__ == "__main__":
    _table, _failures = summary()
    print(_table)
    for _op, _name, _outcome, _detail in _failures:
        print(f"{_op}: {_name}: {_outcome}: {_detail}")
