"""Trace ids: ours are ``trc_`` + a UUIDv7 in hex (time-ordered); a client's is kept as given."""

from __future__ import annotations

import re

import uuid_utils

CLIENT_ID_RE = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")


def new_trace_id() -> str:
    return "trc_" + uuid_utils.uuid7().hex
