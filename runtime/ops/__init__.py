"""numpy kernels of the graph's operators: what CPU groups run on the host, and what
``compiler.reference`` runs to give the bit-exact oracle of a quantized graph.

:data:`KERNELS` maps an operator's name (the compiler's ``Op`` values: ``"Conv"``,
``"QConv"``, ...) to a function of its input arrays and its attributes as keyword arguments
(the fields of the compiler's attribute record, as a saved model's JSON holds them), returning
the output array. ``runtime`` never imports ``compiler``: names and plain values are the
contract between them.
"""

from runtime.ops.float_ops import FLOAT_KERNELS
from runtime.ops.int_ops import INT_KERNELS

#: Every operator's kernel, by operator name.
KERNELS = {**FLOAT_KERNELS, **INT_KERNELS}

__all__ = ["FLOAT_KERNELS", "INT_KERNELS", "KERNELS"]
