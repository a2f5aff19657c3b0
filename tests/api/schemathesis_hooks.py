"""Schemathesis hooks of tests/api/test_schema_fuzz.py (loaded by SCHEMATHESIS_HOOKS): a serializer
for the JSON Lines body of `POST /api/v1/traces/import`, which schemathesis cannot send by itself."""

from __future__ import annotations

from typing import Any

import schemathesis

# traces.export.IMPORT_MEDIA_TYPES (this module runs in schemathesis' process, without Django);
# test_schema_fuzz.py checks the two agree.
IMPORT_MEDIA_TYPES = ("application/x-ndjson", "application/jsonl", "application/x-jsonlines")


@schemathesis.serializer(*IMPORT_MEDIA_TYPES)
def json_lines(ctx: Any, value: Any) -> bytes:
    # The body is text (the schema: a string with a non-blank character). A generated value of another
    # type has no text form on the wire: it goes as an empty body, which the import refuses.
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8", "replace")
    return b""
