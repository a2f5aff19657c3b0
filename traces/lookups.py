"""JSON lookups the trace feed filters need, on Postgres and on SQLite alike.

- `<list field>__has_item="beta"`: the JSON list holds this string (`tags`, `destinations`).
- `metadata__has_entry=("customer", "acme")`: the JSON object maps the key to exactly this
  scalar (a string, number, boolean or null: "5" and 5 are different values).

Postgres answers with jsonb containment (`tags @> '["beta"]'`), which the GIN indexes of
migration 0003 serve; SQLite, which has no containment operator, with `json_each`.
The SQL is chosen when the query compiles, so `.using()` another database works too.
"""

from __future__ import annotations

import json
from typing import Any

from django.db.models import Lookup

_SQLITE_TYPES = {str: ("text",), int: ("integer", "real"), float: ("real", "integer")}


class HasItem(Lookup):
    lookup_name = "has_item"
    prepare_rhs = False

    def as_postgresql(self, compiler: Any, connection: Any) -> tuple[str, tuple[Any, ...]]:
        lhs, lhs_params = self.process_lhs(compiler, connection)
        return f"{lhs} @> %s::jsonb", (*lhs_params, json.dumps([self.rhs]))

    def as_sql(self, compiler: Any, connection: Any) -> tuple[str, tuple[Any, ...]]:
        lhs, lhs_params = self.process_lhs(compiler, connection)
        sql = f"EXISTS (SELECT 1 FROM json_each({lhs}) AS item WHERE item.type = 'text' AND item.value = %s)"
        return sql, (*lhs_params, str(self.rhs))


class HasEntry(Lookup):
    lookup_name = "has_entry"
    prepare_rhs = False

    def as_postgresql(self, compiler: Any, connection: Any) -> tuple[str, tuple[Any, ...]]:
        key, value = self.rhs
        lhs, lhs_params = self.process_lhs(compiler, connection)
        return f"{lhs} @> %s::jsonb", (*lhs_params, json.dumps({key: value}))

    def as_sql(self, compiler: Any, connection: Any) -> tuple[str, tuple[Any, ...]]:
        key, value = self.rhs
        lhs, lhs_params = self.process_lhs(compiler, connection)
        where = f"FROM json_each({lhs}) AS entry WHERE entry.key = %s"
        params: list[Any] = [*lhs_params, key]
        if value is None:
            return f"EXISTS (SELECT 1 {where} AND entry.type = 'null')", tuple(params)
        if isinstance(value, bool):
            return f"EXISTS (SELECT 1 {where} AND entry.type = %s)", (*params, "true" if value else "false")
        types = _SQLITE_TYPES[type(value)]
        placeholders = ", ".join(["%s"] * len(types))
        sql = f"EXISTS (SELECT 1 {where} AND entry.type IN ({placeholders}) AND entry.value = %s)"
        return sql, (*params, *types, value)
