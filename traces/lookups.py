"""JSON lookups the trace feed filters need.

- `<list field>__has_item="beta"`: the JSON list holds this string (`tags`, `destinations`).
- `metadata__has_entry=("customer", "acme")`: the JSON object maps the key to exactly this
  scalar (a string, number, boolean or null: "5" and 5 are different values).

Both are jsonb containment (`tags @> '["beta"]'`), which the GIN indexes of migration 0003 serve.
"""

from __future__ import annotations

import json
from typing import Any

from django.db.models import Lookup


class HasItem(Lookup):
    lookup_name = "has_item"
    prepare_rhs = False

    def as_sql(self, compiler: Any, connection: Any) -> tuple[str, tuple[Any, ...]]:
        lhs, lhs_params = self.process_lhs(compiler, connection)
        return f"{lhs} @> %s::jsonb", (*lhs_params, json.dumps([self.rhs]))


class HasEntry(Lookup):
    lookup_name = "has_entry"
    prepare_rhs = False

    def as_sql(self, compiler: Any, connection: Any) -> tuple[str, tuple[Any, ...]]:
        key, value = self.rhs
        lhs, lhs_params = self.process_lhs(compiler, connection)
        return f"{lhs} @> %s::jsonb", (*lhs_params, json.dumps({key: value}))
