"""The layout map, re-exported: the data types live in ``stichtag.domain.layout`` (pure, shared
with the use cases that place citations); the extractors build them here."""

from __future__ import annotations

from stichtag.domain.layout import (
    LAYOUT_FORMAT,
    SCALE,
    Box,
    Furniture,
    Layout,
    Page,
    Region,
    quantize,
)

__all__ = ["LAYOUT_FORMAT", "SCALE", "Box", "Furniture", "Layout", "Page", "Region", "quantize"]
