"""The CPU target's machine model, the templates' defaults derived from it, and code generation
honouring the target's features exactly.

The widest vector register in the generated assembly (LLVM's own reading of the target) is the
independent reference for the model's lane count; numpy is the reference for the results under
every target this host can run."""

from __future__ import annotations

import re

import numpy as np
import pytest

from compiler import CompileError, build, te
from compiler.codegen import Target, codegen
from compiler.lower import lower
from compiler.templates import (
    CONV2D_NCHW,
    CONV2D_NCHWC,
    DEPTHWISE_CONV2D,
    ELEMENTWISE,
    MATMUL,
    POOL2D,
    nchwc_block,
)
from tests.compiler import reference
from tests.guards import guarded_like

X86 = "llvm -mtriple=x86_64-unknown-linux-gnu"
#: (spec, lanes, registers, fma) written out by hand from the vendors' manuals.
MODELS = [
    (f"{X86} -mcpu=x86-64", 4, 16, False),
    (f"{X86} -mcpu=nehalem", 4, 16, False),
    (f"{X86} -mcpu=sandybridge", 8, 16, False),
    (f"{X86} -mcpu=bdver2", 8, 16, True),
    (f"{X86} -mcpu=haswell", 8, 16, True),
    (f"{X86} -mcpu=znver3", 8, 16, True),
    (f"{X86} -mcpu=alderlake", 8, 16, True),
    (f"{X86} -mcpu=skylake-avx512", 16, 32, True),
    (f"{X86} -mcpu=znver4", 16, 32, True),
    (f"{X86} -mcpu=emeraldrapids -mattr=-avx512f", 8, 16, True),
    (f"{X86} -mcpu=haswell -mattr=-avx", 4, 16, False),
    (f"{X86} -mcpu=haswell -mattr=-avx2", 8, 16, True),
    (f"{X86} -mcpu=haswell -mattr=-fma", 8, 16, False),
    (f"{X86} -mcpu=x86-64 -mattr=+avx2", 8, 16, False),
    (f"{X86} -mcpu=x86-64 -mattr=+fma", 8, 16, True),
    (f"{X86} -mcpu=x86-64 -mattr=+avx512f", 16, 32, True),
    (f"{X86} -mcpu=skylake-avx512 -mattr=-avx512f,+avx512f", 16, 32, True),
    ("llvm -mtriple=i686-unknown-linux-gnu -mcpu=haswell", 8, 8, True),
    ("llvm -mtriple=aarch64-unknown-linux-gnu", 4, 32, True),
]
#: The three vector widths of x86, named by explicit CPUs.
SSE, AVX2, AVX512 = (f"{X86} -mcpu={cpu}" for cpu in ("x86-64", "haswell", "skylake-avx512"))


@pytest.mark.parametrize(("spec", "lanes", "registers", "fma"), MODELS)
def test_the_machine_model_follows_cpu_and_features(spec, lanes, registers, fma):
    model = Target.parse(spec).model
    assert (model.lanes, model.registers, model.fma) == (lanes, registers, fma)


def test_a_named_cpu_never_takes_the_host_features():
    host = Target.host()
    named = Target.parse(f"llvm -mcpu={host.cpu}")
    assert (named.triple, named.cpu, named.features) == (host.triple, host.cpu, "")
    edited = Target.parse("llvm -mattr=-avx512f")
    assert edited.cpu == host.cpu
    assert edited.features == f"{host.features},-avx512f"


def test_a_feature_without_a_sign_is_a_compile_error():
    with pytest.raises(CompileError, match=r"\['avx2'\] need a '\+'"):
        Target.parse(f"{X86} -mcpu=x86-64 -mattr=avx2")


def test_an_unknown_x86_64_cpu_is_a_compile_error_not_an_llvm_abort():
    with pytest.raises(CompileError, match="unknown x86-64 CPU 'pentium4'"):
        Target.parse(f"{X86} -mcpu=pentium4")  # 32-bit only: LLVM would abort the process


def _assembly(spec: str) -> str:
    """The assembly of a 64-lane vectorised multiply-add."""
    x = te.placeholder((64,), name="x")
    cfg = {"vector": 64, "vectorize": True, "parallel": False}
    s, y = ELEMENTWISE.declare(x, cfg=cfg, fn=lambda v: v * v + 1.0)
    return codegen(lower(s, [x, y], "fma"), spec).emit_assembly()


@pytest.mark.parametrize("spec", [spec for spec, *_ in MODELS if "aarch64" not in spec])
def test_code_uses_exactly_the_vector_width_and_fma_of_the_model(spec):
    """LLVM's code for the target, the model's independent reference: the widest register is
    the model's lanes, FMA instructions appear exactly where the model has FMA, and code for
    an AVX2 target has no AVX-512 instruction (no zmm, no mask register, no xmm16-31 / ymm16-31,
    ``-mattr=-avx512f`` included). AVX-512 code is compiled to assembly only (the host need not
    have AVX-512)."""
    model = Target.parse(spec).model
    assembly = _assembly(spec)
    used = {name for name in ("xmm", "ymm", "zmm") if re.search(rf"%{name}\d", assembly)}
    assert max({"xmm": 4, "ymm": 8, "zmm": 16}[name] for name in used) == model.lanes
    assert ("vfmadd" in assembly) == model.fma
    evex = re.search(r"%k[0-7]\b|%[xy]mm(1[6-9]|2\d|3[01])\b", assembly)
    assert model.lanes == 16 or evex is None, evex


# ----------------------------------------------------------------------- defaults per target
@pytest.mark.parametrize("spec", [SSE, AVX2, AVX512])
def test_matmul_register_tile_fits_the_register_file(spec):
    model = Target.parse(spec).model
    a, b = te.placeholder((1024, 512), name="A"), te.placeholder((512, 1024), name="B")
    cfg = MATMUL.space(a, b, target=spec).default()
    vectors = cfg["tile_n"] // model.lanes
    assert cfg["tile_n"] == 2 * model.lanes
    assert cfg["tile_m"] * vectors + vectors + 1 <= model.registers
    assert cfg["tile_m"] * vectors >= model.registers // 4  # enough to hide FMA latency
    assert 1024 % cfg["tile_m"] == 0  # no partial tile


@pytest.mark.parametrize("spec", [SSE, AVX2, AVX512])
@pytest.mark.parametrize(("channels", "size"), [(64, 56), (128, 28), (256, 14), (512, 7)])
def test_nchwc_block_and_tile_fit_the_target(spec, channels, size):
    model = Target.parse(spec).model
    block = nchwc_block(channels, spec, out_width=size)
    assert block % model.lanes == 0 and channels % block == 0
    groups = channels // block
    data = te.placeholder((1, groups, size, size, block), name="data")
    kernel = te.placeholder((groups, groups, 3, 3, block, block), name="kernel")
    tile_ow = CONV2D_NCHWC.space(data, kernel, padding=1, target=spec).default()["tile_ow"]
    vectors = block // model.lanes
    assert tile_ow * vectors + vectors + 1 <= model.registers
    assert tile_ow * vectors >= min(size * vectors, model.registers // 4)  # hides FMA latency


def test_nchwc_block_of_channels_that_are_not_a_multiple_of_the_vector():
    assert [nchwc_block(c, AVX2) for c in (3, 12, 24, 40)] == [1, 4, 8, 8]


def test_nchwc_block_avoids_a_partial_register_tile_at_the_end_of_a_row():
    """AVX2: 4 pixels x 2 vectors fit 8 accumulators and tile 56 and 28 wide rows; a 14 wide
    row takes 2 pixels x 4 vectors instead of 4 + 4 + 4 + 2; 7 ends partially either way."""
    widths = (56, 28, 14, 7)
    assert [nchwc_block(256, AVX2, out_width=w) for w in widths] == [16, 16, 32, 16]
    assert nchwc_block(256, AVX2) == 16


@pytest.mark.parametrize("spec", [SSE, AVX2, AVX512])
def test_vector_knobs_default_to_the_target_width(spec):
    lanes = Target.parse(spec).model.lanes
    x, w = te.placeholder((1, 8, 40, 40), name="x"), te.placeholder((8, 8, 3, 3), name="w")
    dw = te.placeholder((8, 1, 3, 3), name="dw")
    nchw = CONV2D_NCHW.space(x, w, padding=1, target=spec).default()
    assert nchw["tile_ow"] == lanes
    assert nchw["tile_oc"] + 1 + 1 <= Target.parse(spec).model.registers  # one vector per row
    assert DEPTHWISE_CONV2D.space(x, dw, padding=1, target=spec).default()["tile_ow"] == lanes
    assert POOL2D.space(x, kernel=2, stride=1, target=spec).default()["tile_ow"] == lanes
    assert ELEMENTWISE.space(x, fn=lambda v: v + 1.0, target=spec).default()["vector"] == lanes


# --------------------------------------------------------- every template equal to numpy
def _runnable_targets() -> list[str]:
    """This host's targets at each x86 vector width it has (host features minus the wider
    extensions), so the code runs here."""
    host = Target.host()
    if not host.triple.startswith("x86_64"):
        return ["llvm"]
    lanes = host.model.lanes
    return [
        spec
        for spec, width in (("llvm -mattr=-avx", 4), ("llvm -mattr=-avx512f", 8), ("llvm", 16))
        if width <= lanes
    ]


def _run(spec: str, schedule, args, arrays) -> np.ndarray:
    out = guarded_like(arrays[-1])
    build(schedule, args, target=spec)(*arrays[:-1], out.array, num_threads=2)
    return out.checked()


def _conv_case(spec: str, rng: np.random.Generator) -> None:
    x_np = rng.standard_normal((1, 16, 9, 11)).astype(np.float32)
    w_np = rng.standard_normal((24, 16, 3, 3)).astype(np.float32)
    expected = reference.conv2d_nchw(x_np, w_np, 1, 1)
    x, w = te.placeholder(x_np.shape, name="x"), te.placeholder(w_np.shape, name="w")
    s, y = CONV2D_NCHW(x, w, padding=1, target=spec)
    got = _run(spec, s, [x, w, y], [x_np, w_np, np.zeros(y.shape, np.float32)])
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)
    ib, ob = nchwc_block(16, spec), nchwc_block(24, spec)
    xb = te.placeholder((1, 16 // ib, 9, 11, ib), name="x")
    wb = te.placeholder((24 // ob, 16 // ib, 3, 3, ib, ob), name="w")
    s, y = CONV2D_NCHWC(xb, wb, padding=1, target=spec)
    blocked = [reference.to_nchwc(x_np, ib), reference.kernel_to_nchwc(w_np, ib, ob)]
    got = _run(spec, s, [xb, wb, y], [*blocked, np.zeros(y.shape, np.float32)])
    np.testing.assert_allclose(reference.from_nchwc(got), expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("spec", _runnable_targets())
def test_every_template_equals_numpy_under_the_target(spec):
    rng = np.random.default_rng(len(spec))
    a_np, b_np = (rng.standard_normal(s).astype(np.float32) for s in ((37, 29), (29, 70)))
    a, b = te.placeholder(a_np.shape, name="A"), te.placeholder(b_np.shape, name="B")
    s, c = MATMUL(a, b, target=spec)
    got = _run(spec, s, [a, b, c], [a_np, b_np, np.zeros(c.shape, np.float32)])
    np.testing.assert_allclose(got, a_np.astype(np.float64) @ b_np, rtol=1e-4, atol=1e-4)
    _conv_case(spec, rng)
    x_np = rng.standard_normal((2, 5, 13, 21)).astype(np.float32)
    x = te.placeholder(x_np.shape, name="x")
    dw_np = rng.standard_normal((5, 1, 3, 3)).astype(np.float32)
    dw = te.placeholder(dw_np.shape, name="dw")
    s, y = DEPTHWISE_CONV2D(x, dw, stride=2, padding=1, target=spec)
    got = _run(spec, s, [x, dw, y], [x_np, dw_np, np.zeros(y.shape, np.float32)])
    expected = reference.depthwise_nchw(x_np, dw_np, 2, 1)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)
    for kind in ("max", "avg"):
        s, y = POOL2D(x, kernel=3, stride=2, padding=1, kind=kind, target=spec)
        got = _run(spec, s, [x, y], [x_np, np.zeros(y.shape, np.float32)])
        expected = reference.pool2d(x_np, 3, 2, 1, kind)
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    bias_np = rng.standard_normal((21,)).astype(np.float32)
    bias = te.placeholder(bias_np.shape, name="bias")
    s, y = ELEMENTWISE(x, bias, fn=lambda u, v: te.max(u * v + 1.0, 0.0), target=spec)
    got = _run(spec, s, [x, bias, y], [x_np, bias_np, np.zeros(y.shape, np.float32)])
    np.testing.assert_allclose(got, np.maximum(x_np * bias_np + 1, 0), rtol=1e-6, atol=1e-6)
