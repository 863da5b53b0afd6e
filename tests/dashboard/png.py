"""Just enough of PNG to check a screenshot (8-bit RGB or RGBA, not interlaced, as Chromium
writes them), with the standard library only."""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

SIGNATURE = b"\x89PNG\r\n\x1a\n"


@dataclass(frozen=True)
class Image:
    width: int
    height: int
    pixels: list[tuple[int, int, int]]
    """Row by row, alpha dropped."""


def read_png(data: bytes) -> Image:
    assert data[:8] == SIGNATURE, "not a PNG file"
    chunks, offset = {}, 8
    idat = b""
    while offset < len(data):
        (length,) = struct.unpack(">I", data[offset : offset + 4])
        kind = data[offset + 4 : offset + 8]
        body = data[offset + 8 : offset + 8 + length]
        offset += 12 + length
        if kind == b"IDAT":
            idat += body
        else:
            chunks[kind] = body
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", chunks[b"IHDR"])
    assert depth == 8, "an unexpected PNG layout"
    assert colour in (2, 6), "an unexpected PNG layout"
    assert interlace == 0, "an unexpected PNG layout"
    channels = 3 if colour == 2 else 4
    rows = _unfilter(zlib.decompress(idat), width * channels, height, channels)
    pixels = [
        (row[i], row[i + 1], row[i + 2]) for row in rows for i in range(0, len(row), channels)
    ]
    return Image(width, height, pixels)


def _unfilter(raw: bytes, stride: int, height: int, bpp: int) -> list[bytearray]:
    rows: list[bytearray] = []
    previous = bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1 : start + 1 + stride])
        for i in range(stride):
            left = line[i - bpp] if i >= bpp else 0
            up = previous[i]
            corner = previous[i - bpp] if i >= bpp else 0
            line[i] = (line[i] + _predict(kind, left, up, corner)) & 0xFF
        rows.append(line)
        previous = line
    return rows


def _predict(kind: int, left: int, up: int, corner: int) -> int:
    if kind == 0:
        return 0
    if kind == 1:
        return left
    if kind == 2:
        return up
    if kind == 3:
        return (left + up) // 2
    guess = left + up - corner  # Paeth
    pa, pb, pc = abs(guess - left), abs(guess - up), abs(guess - corner)
    if pa <= pb and pa <= pc:
        return left
    return up if pb <= pc else corner
