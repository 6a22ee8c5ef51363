"""The support matrix: for every operator of the operator set, what each part of vtaforge
does with it, read from the registries (never written by hand).

Columns: the ONNX operator types and aten overloads that import to it (their converters'
declared ``emits``, which the importers enforce), whether the float reference runs it (every
operator has a numpy kernel), how quantization treats it (the integer operator it becomes, or
"int8 through" for layout operators that carry int8 values, or where an integer operator comes
from), whether an accelerator template takes it, and its CPU kernel (an LLVM library where
:mod:`compiler.model.cpu_kernels` declares one, else numpy).

Run ``python -m compiler.model.support`` to print it.
"""

from __future__ import annotations

from dataclasses import dataclass

from compiler.frontend.onnx import from_onnx  # noqa: F401  (registers the converters)
from compiler.frontend.onnx_node import CONVERTERS as ONNX_CONVERTERS
from compiler.graph.ir import Op
from compiler.graph.passes.quantize import PASS_THROUGH, QUANTIZE_RULES
from compiler.model.accel_lowering import ACCEL_TEMPLATES
from compiler.model.cpu_kernels import LLVM_KERNELS
from runtime.opset import OPERATORS, Origin

__all__ = ["SupportRow", "format_matrix", "support_matrix"]


@dataclass(frozen=True)
class SupportRow:
    """One operator's row of the matrix."""

    op: Op
    origin: Origin
    onnx: tuple[str, ...]
    torch: tuple[str, ...]
    reference: bool
    quantize: str
    accelerator: str
    cpu_kernel: str


def _torch_converters() -> dict[Op, list[str]]:
    """aten overloads by the operators their converters may emit (empty without torch)."""
    try:
        from compiler.frontend.torch import from_torch  # noqa: F401  (registers converters)
        from compiler.frontend.torch_node import CONVERTERS
    except ImportError:
        return {}
    found: dict[Op, list[str]] = {}
    for target, entry in CONVERTERS.items():
        for op in entry.emits:
            found.setdefault(op, []).append(str(target).removeprefix("aten."))
    return found


def _onnx_converters() -> dict[Op, list[str]]:
    found: dict[Op, list[str]] = {}
    for op_type, versions in ONNX_CONVERTERS.items():
        for version in versions:
            for op in version.emits:
                label = op_type if len(versions) == 1 else f"{op_type} (opset {version.since}+)"
                found.setdefault(op, []).append(label)
    return found


def _quantize(op: Op) -> str:
    if op in QUANTIZE_RULES:
        return "-> " + ", ".join(o.value for o in QUANTIZE_RULES[op].produces)
    if op in PASS_THROUGH:
        return "int8 through"
    sources = [r.op.value for r in QUANTIZE_RULES.values() if op in r.produces]
    return f"from {', '.join(sources)}" if sources else ""


def support_matrix() -> list[SupportRow]:
    """Every registered operator's row: ONNX operators, then integer ones, then layout
    changes, each by name."""
    onnx, torch = _onnx_converters(), _torch_converters()
    rows = []
    origins = list(Origin)
    ordered = sorted(OPERATORS.items(), key=lambda item: (origins.index(item[1].origin), item[0]))
    for name, definition in ordered:
        op = Op(name)
        template = ACCEL_TEMPLATES.get(op)
        accel = ""
        if template is not None:
            count = len(template.requirements)
            accel = f"template ({count} conditions)" if count else "template"
        rows.append(
            SupportRow(
                op,
                definition.origin,
                tuple(dict.fromkeys(onnx.get(op, []))),
                tuple(sorted(set(torch.get(op, [])))),
                True,
                _quantize(op),
                accel,
                "llvm" if name in LLVM_KERNELS.ops else "numpy",
            )
        )
    return rows


def format_matrix(rows: list[SupportRow]) -> str:
    """The matrix as a Markdown table."""
    header = ["operator", "origin", "ONNX", "torch", "float ref", "quantize", "accel", "CPU"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for r in rows:
        cells = [
            r.op.value,
            r.origin.value,
            ", ".join(r.onnx),
            ", ".join(r.torch),
            "yes" if r.reference else "",
            r.quantize,
            r.accelerator,
            r.cpu_kernel,
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(format_matrix(support_matrix()))
