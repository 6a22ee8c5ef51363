"""The support matrix, read from the registries: printed (``pytest -s``), and held to what
each kind of operator must have."""

from __future__ import annotations

import pytest

from compiler.frontend.converters import check_emits
from compiler.graph.ir import GraphBuilder, Op
from compiler.graph.passes.quantize import QUANTIZE_RULES
from compiler.model.accel_lowering import ACCEL_TEMPLATES
from compiler.model.partition import RULES
from compiler.model.support import format_matrix, support_matrix
from runtime.opset import OPERATORS, Origin


@pytest.fixture(scope="module")
def rows():
    matrix = support_matrix()
    print("\n" + format_matrix(matrix))
    return {row.op: row for row in matrix}


def test_every_operator_has_one_row(rows):
    assert sorted(op.value for op in rows) == sorted(OPERATORS)


def test_every_onnx_operator_is_read_from_onnx_under_its_own_name(rows):
    for op, row in rows.items():
        if row.origin is Origin.ONNX:
            assert any(label.split(" ")[0] == op.value for label in row.onnx), op


def test_every_integer_operator_comes_from_a_quantize_rule_and_nothing_else_does(rows):
    produced = {op for rule in QUANTIZE_RULES.values() for op in rule.produces}
    quantized = {op for op, row in rows.items() if row.origin is Origin.QUANTIZED}
    assert produced == quantized
    assert all(rows[rule.op].origin is Origin.ONNX for rule in QUANTIZE_RULES.values())


def test_accelerator_templates_take_integer_operators_and_the_report_states_their_conditions(
    rows,
):
    for op, template in ACCEL_TEMPLATES.items():
        assert rows[op].origin is Origin.QUANTIZED
        rule = next(r for r in RULES if r.startswith(f"{op.value} runs on the accelerator"))
        assert all(requirement.text in rule for requirement in template.requirements)


def test_layout_changes_and_cpu_target_operators_have_compiled_cpu_kernels(rows):
    for row in rows.values():
        if row.origin in (Origin.LAYOUT, Origin.CPU):
            assert row.cpu_kernel == "llvm" and not row.onnx and not row.torch
    assert rows[Op.CONV_NCHWC].origin is Origin.CPU and rows[Op.CONV].cpu_kernel == "llvm"


def test_a_converter_that_adds_an_undeclared_operator_is_caught():
    builder = GraphBuilder()
    mark = builder.mark()
    x = builder.input("x", (1, 4))
    builder.add1(Op.RELU, [x])
    added = builder.nodes_since(mark)
    check_emits(added, frozenset({Op.RELU}), "Relu")
    with pytest.raises(RuntimeError, match=r"the converter of Sigmoid added \['Relu'\]"):
        check_emits(added, frozenset({Op.SIGMOID}), "Sigmoid")
