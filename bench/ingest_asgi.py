"""The server's ASGI app for `bench/ingest.py --compare-rollups`: `config.asgi.application` with the
rollups' ingest receiver (`analytics.rollups.record_stored`, connected to `traces_stored` as
``analytics.rollups``) skipped for the teams in ``BENCH_NO_ROLLUP_TEAMS`` (ids, comma-separated).
Every other team's traces write their rollup deltas as usual, in the same call, so both variants
of the comparison pay the same (tiny) filtering cost. Bench only: analytics has no such setting.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from config.asgi import application  # sets Django up

# isort: split
from analytics.rollups import record_stored  # noqa: E402 - after Django is set up
from traces.signals import traces_stored  # noqa: E402

SKIPPED = frozenset(int(team) for team in os.environ.get("BENCH_NO_ROLLUP_TEAMS", "").split(",") if team)
RECEIVER = "analytics.rollups"


def record_unless_skipped(sender: Any = None, *, rows: Sequence[Any], **kwargs: Any) -> None:
    kept = [row for row in rows if row.team_id not in SKIPPED]
    if kept:
        record_stored(sender, rows=kept, **kwargs)


if not traces_stored.disconnect(dispatch_uid=RECEIVER):
    raise RuntimeError(f"no traces_stored receiver {RECEIVER!r}: bench/ingest_asgi.py must follow analytics/apps.py")
traces_stored.connect(record_unless_skipped, dispatch_uid=RECEIVER, weak=False)

__all__ = ["application"]
