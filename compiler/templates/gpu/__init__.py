"""GPU (CUDA) operator templates: each declares a computation (the CPU template's declaration
where there is one) and schedules it for ``compiler.build(..., target="cuda")`` from a knob
configuration, with blocks and threads bound, shared-memory tiles and register accumulators."""

from compiler.templates.gpu.conv2d import GPU_CONV2D_NCHW
from compiler.templates.gpu.elementwise import GPU_ELEMENTWISE
from compiler.templates.gpu.matmul import GPU_MATMUL
from compiler.templates.gpu.pool import GPU_POOL2D
from compiler.templates.gpu.softmax import GPU_SOFTMAX

__all__ = ["GPU_CONV2D_NCHW", "GPU_ELEMENTWISE", "GPU_MATMUL", "GPU_POOL2D", "GPU_SOFTMAX"]
