"""Operators that resample or scatter spatial data: Resize (and Upsample) and ConvTranspose."""

from __future__ import annotations

__all__: list[str] = []
