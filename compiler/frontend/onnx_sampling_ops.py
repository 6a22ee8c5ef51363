"""The ONNX converters of Resize, Upsample and ConvTranspose."""

from __future__ import annotations

__all__: list[str] = []  # importing this module registers the converters
