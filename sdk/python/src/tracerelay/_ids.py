"""Trace ids and the sampling point: the same as the server's (`traces/ids.py`, `routing/router.py`)."""

from __future__ import annotations

import hashlib
import os
import time


def new_trace_id() -> str:
    """``trc_`` + a UUIDv7 in hex (48 bits of Unix milliseconds, version, variant, 74 random bits).

    Chosen here, not by the server, so a batch sent again after a lost answer stores nothing twice:
    the server answers 200 with the stored trace for an id it has.
    """
    value = (time.time_ns() // 1_000_000) << 80 | int.from_bytes(os.urandom(10), "big")
    value = (value & ~(0xF << 76)) | (0x7 << 76)  # version 7
    value = (value & ~(0x3 << 62)) | (0x2 << 62)  # RFC 9562 variant
    return f"trc_{value:032x}"


def sample_point(trace_id: str) -> float:
    """A uniform number in [0, 1) fixed by the id, computed exactly as the server's router does."""
    digest = hashlib.blake2b(trace_id.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64
