"""The lowering passes: each a pure function from a lowered function to a lowered function.

:data:`compiler.lower.PIPELINE` lists them in the order they run.
"""

from compiler.passes.flatten import flatten
from compiler.passes.gpu import insert_barriers
from compiler.passes.simplify import simplify
from compiler.passes.tensorize import tensorize

__all__ = ["flatten", "insert_barriers", "simplify", "tensorize"]
