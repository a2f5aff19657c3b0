"""`<json list field>__has_item=value`: the list holds this string, on Postgres and on SQLite.

Postgres answers with jsonb containment (`tags @> '["beta"]'`), which the GIN indexes of
migration 0003 serve; SQLite, which has no containment operator, with `json_each`.
Registered on the Trace fields that hold lists (`tags`, `destinations`) only.
"""

from __future__ import annotations

import json
from typing import Any

from django.db.models import Lookup


class HasItem(Lookup):
    lookup_name = "has_item"

    def get_db_prep_lookup(self, value: Any, connection: Any) -> tuple[str, list[Any]]:
        return "%s", [value]

    def as_postgresql(self, compiler: Any, connection: Any) -> tuple[str, list[Any]]:
        lhs, lhs_params = self.process_lhs(compiler, connection)
        return f"{lhs} @> %s::jsonb", [*lhs_params, json.dumps([self.rhs])]

    def as_sql(self, compiler: Any, connection: Any) -> tuple[str, list[Any]]:
        lhs, lhs_params = self.process_lhs(compiler, connection)
        return f"EXISTS (SELECT 1 FROM json_each({lhs}) WHERE json_each.value = %s)", [*lhs_params, self.rhs]
