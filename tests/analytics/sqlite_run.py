"""Run by test_sqlite.py in a process of its own on the embedded default (SQLite, no Redis):
store traces with their pending batch rows, fold part of them, and check figures against the recount."""

from __future__ import annotations

import os
import sys
from datetime import UTC, datetime, timedelta

import django

os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings"
django.setup()

from django.core.management import call_command  # noqa: E402

from accounts.models import Team  # noqa: E402
from analytics import rollups  # noqa: E402
from analytics.selectors import analytics_for_team, parse_query  # noqa: E402
from tests.analytics.data import check, make_traces, store  # noqa: E402

NOW = datetime(2026, 11, 20, 15, 17, 23, tzinfo=UTC)


def main() -> None:
    call_command("migrate", verbosity=0)
    team = Team.objects.create(name="sqlite")
    rows = make_traces(team.id, n=1200, start=NOW - timedelta(days=3), span=timedelta(days=3) - timedelta(seconds=1))
    store(rows[:800])
    assert rollups.fold() > 0
    store(rows[800:])
    for params, keep, group in [
        ({"since": "2026-11-17T15:40:00Z"}, lambda t: True, None),
        ({"since": "2026-11-17T00:00:00Z", "interval": "day", "tz": "Asia/Kolkata"}, lambda t: True, "model"),
        ({"since": "2026-11-18T00:00:00Z", "provider": "openai"}, lambda t: t.provider == "openai", "status"),
        ({"since": "2026-11-18T00:00:00Z"}, lambda t: True, "tag"),
        (
            {"since": "2026-11-18T00:00:00Z", "metadata.customer": "acme"},
            lambda t: t.metadata["customer"] == "acme",
            "user",
        ),
    ]:
        query = parse_query({**params, **({"group_by": group} if group else {})}, now=NOW, limit=None)
        body = analytics_for_team(team_id=team.id, query=query, now=NOW)
        check(body, rows, keep, group=group)
        assert body["queue"]["broker"] is None
    print("ok")


if __name__ == "__main__":
    main()
    sys.exit(0)
