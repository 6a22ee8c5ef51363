"""Small float graphs built directly with GraphBuilder (no frontend), seeded: what the model
compiler's tests compile."""

from __future__ import annotations

import numpy as np

from compiler.graph import AxisAttrs, ConvAttrs, GemmAttrs, Graph, GraphBuilder, Op, PoolAttrs
from runtime.opset import LayerNormAttrs, ReshapeAttrs, TransposeAttrs


def residual_cnn(
    seed: int = 0,
    *,
    channels: int = 16,
    size: int = 16,
    in_channels: int = 3,
    classes: int = 10,
    batch: int = 1,
    pool: bool = True,
) -> Graph:
    """conv3x3 + relu, [maxpool 3x3/2 pad 1], conv3x3, add the skip, relu, global average
    pool, flatten, dense, softmax: every operator the accelerator runs, and two it does not."""
    rng = np.random.default_rng(seed)

    def weights(*shape: int, scale: float) -> np.ndarray:
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    b = GraphBuilder(f"residual_cnn_{seed}")
    x = b.input("x", (batch, in_channels, size, size))
    same = ConvAttrs(pads=(1, 1, 1, 1))
    w1 = b.param("w1", weights(channels, in_channels, 3, 3, scale=0.5 / in_channels**0.5))
    c1 = b.add1(Op.CONV, [x, w1, b.param("b1", weights(channels, scale=0.1))], same, name="conv1")
    h = b.add1(Op.RELU, [c1], name="relu1")
    if pool:
        h = b.add1(Op.MAX_POOL, [h], PoolAttrs((3, 3), (2, 2), (1, 1, 1, 1)), name="pool")
    w2 = b.param("w2", weights(channels, channels, 3, 3, scale=0.5 / channels**0.5))
    c2 = b.add1(Op.CONV, [h, w2, b.param("b2", weights(channels, scale=0.1))], same, name="conv2")
    r = b.add1(Op.RELU, [b.add1(Op.ADD, [c2, h], name="add")], name="relu2")
    g = b.add1(Op.GLOBAL_AVERAGE_POOL, [r], name="gap")
    f = b.add1(Op.FLATTEN, [g], AxisAttrs(1), name="flatten")
    fw = b.param("fc_w", weights(classes, channels, scale=1.0 / channels**0.5))
    y = b.add1(
        Op.GEMM,
        [f, fw, b.param("fc_b", weights(classes, scale=0.1))],
        GemmAttrs(trans_b=True),
        name="fc",
    )
    return b.build([b.add1(Op.SOFTMAX, [y], AxisAttrs(1), name="softmax")])


def samples(graph: Graph, count: int, seed: int = 1) -> list[np.ndarray]:
    """``count`` seeded standard-normal inputs for a single-input graph."""
    rng = np.random.default_rng(seed)
    shape = graph.types[graph.inputs[0]].shape
    return [rng.standard_normal(shape).astype(np.float32) for _ in range(count)]


def token_mlp(seed: int = 0, *, tokens: int = 8, width: int = 16, hidden: int = 32) -> Graph:
    """A transformer's MLP on ``[1, tokens, width]`` as frontends write Linear layers of 3-D
    inputs (MatMul by the transposed weight, then Add of the bias): Linear, ReLU, Linear,
    then LayerNorm (which stays on the CPU)."""
    rng = np.random.default_rng(seed)
    b = GraphBuilder(f"token_mlp_{seed}")
    x = b.input("x", (1, tokens, width))

    def linear(value: str, k: int, m: int, name: str) -> str:
        w = b.param(f"{name}.w", (rng.standard_normal((k, m)) / k**0.5).astype(np.float32))
        bias = b.param(f"{name}.b", (rng.standard_normal(m) * 0.1).astype(np.float32))
        product = b.add1(Op.MATMUL, [value, w], name=f"{name}.matmul")
        return b.add1(Op.ADD, [bias, product], name=name)

    h = b.add1(Op.RELU, [linear(x, width, hidden, "fc1")], name="relu")
    y = linear(h, hidden, width, "fc2")
    scale = b.param("ln.scale", np.ones(width, np.float32))
    return b.build([b.add1(Op.LAYER_NORM, [y, scale], LayerNormAttrs(2), name="ln")])


def self_attention(
    seed: int = 0, *, tokens: int = 8, width: int = 32, heads: int = 2, transposed_keys: bool = True
) -> Graph:
    """Multi-head self-attention on ``[1, tokens, width]`` as frontends write it: query, key and
    value Linears (MatMul + Add), heads split by Reshape + Transpose, ``Q @ K^T`` (the keys
    transposed by a Transpose node, or with ``transposed_keys=False`` the product taken against
    a Transpose of the queries instead, as ``K @ Q^T``), scaled by a Mul, Softmax, ``@ V``, the
    heads merged back and an output Linear."""
    rng = np.random.default_rng(seed)
    b = GraphBuilder(f"self_attention_{seed}")
    x = b.input("x", (1, tokens, width))
    head = width // heads

    def linear(value: str, name: str) -> str:
        w = b.param(
            f"{name}.w", (rng.standard_normal((width, width)) / width**0.5).astype(np.float32)
        )
        bias = b.param(f"{name}.b", (rng.standard_normal(width) * 0.1).astype(np.float32))
        return b.add1(
            Op.ADD, [b.add1(Op.MATMUL, [value, w], name=f"{name}.matmul"), bias], name=name
        )

    def heads_of(value: str, perm: tuple[int, ...], name: str) -> str:
        split = b.add1(
            Op.RESHAPE, [value], ReshapeAttrs((1, tokens, heads, head)), name=f"{name}.split"
        )
        return b.add1(Op.TRANSPOSE, [split], TransposeAttrs(perm), name=f"{name}.heads")

    q = heads_of(linear(x, "q"), (0, 2, 1, 3), "q")
    v = heads_of(linear(x, "v"), (0, 2, 1, 3), "v")
    if transposed_keys:
        k_t = heads_of(linear(x, "k"), (0, 2, 3, 1), "k")
        scores = b.add1(Op.MATMUL, [q, k_t], name="scores")
    else:
        k = heads_of(linear(x, "k"), (0, 2, 1, 3), "k")
        q_t = b.add1(Op.TRANSPOSE, [q], TransposeAttrs((0, 1, 3, 2)), name="q.t")
        scores = b.add1(Op.MATMUL, [k, q_t], name="scores")
    scale = b.param("scale", np.array(head**-0.5, np.float32))
    scaled = b.add1(Op.MUL, [scores, scale], name="scaled")
    probs = b.add1(Op.SOFTMAX, [scaled], AxisAttrs(3), name="softmax")
    context = b.add1(Op.MATMUL, [probs, v], name="context")
    merged = b.add1(Op.TRANSPOSE, [context], TransposeAttrs((0, 2, 1, 3)), name="merge")
    flat = b.add1(Op.RESHAPE, [merged], ReshapeAttrs((1, tokens, width)), name="merge.flat")
    return b.build([linear(flat, "out")])
