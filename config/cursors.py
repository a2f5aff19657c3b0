"""The opaque cursor every paginated list gives out: URL-safe base64 of a short text, no padding."""

from __future__ import annotations

import base64
import binascii


def encode_cursor(raw: str) -> str:
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_cursor(value: str) -> str:
    """The text inside a cursor; ValueError when it is not one (the caller says what it expected)."""
    try:
        return base64.urlsafe_b64decode(value + "=" * (-len(value) % 4)).decode()
    except (ValueError, binascii.Error, UnicodeDecodeError) as exc:
        raise ValueError("not a cursor") from exc
