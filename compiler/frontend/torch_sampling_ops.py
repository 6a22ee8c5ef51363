"""The aten converters of interpolation and transposed convolution."""

from __future__ import annotations

__all__: list[str] = []  # importing this module registers the converters
