"""Runs routed as trees (docs/routing.md, "Runs").

Rules match spans. A structural span (any kind but ``llm`` and ``embedding``) follows its run: it
goes to every destination any span of the run was routed to, whichever arrives first, so each
destination receives a connected tree and never an orphan call. A call goes only where its own
rules sent it.

The run's destinations live in one `RunRoute` row per run. Ingest calls `claim_runs` inside its
transaction, before inserting its trace rows: one ``INSERT … ON CONFLICT DO UPDATE`` adds what this
batch's spans were routed to and returns the run's whole set, and its row lock (held until the
ingest transaction commits) makes a concurrent writer of the same run wait, then see the rows
this one stored. The new structural spans of the batch are given the whole set
(`RunClaims.follow`); once the trace rows are in, `RunClaims.backfill` sends the run's
already-stored structural spans to the destinations this batch added. Both write outbox rows
guarded by the unique (trace, destination) constraint, so a span reaches a destination once.

A call sent without a run (its run is its own id) and without a parent is a run of one: it takes
no part in this (no lock, no row), so today's per-call ingest pays nothing for runs.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson
from django.db import connection
from django.utils import timezone
from psycopg.types.json import Jsonb

from config.bulk import build_row
from config.jsoncodec import dumps
from routing.router import DestinationSpec, RoutingResult
from traces.models import Trace
from traces.records import CALL_KINDS, TraceRecord

from .models import Delivery, DeliveryStatus

RunKey = tuple[int, str]  # (team id, run id)


def takes_part(record: TraceRecord, result: RoutingResult) -> bool:
    """Whether a span joins its run's routing: every structural span; a call routed somewhere,
    unless it is a run of one (no parent, and its run is itself)."""
    if not record.is_call:
        return True
    if not result.kept:
        return False
    return bool(record.parent_id) or record.run != record.trace_id


def follow_reason(entry: Mapping[str, Any]) -> str:
    return f"follows its run: span '{entry['by']}' was routed here by rule '{entry['rule']}'"


@dataclass(slots=True)
class RunClaims:
    """One ingest transaction's share of its runs' routing: each run's destinations after this
    batch (``routes``) and the ones this batch added (``added``)."""

    routes: dict[RunKey, dict[str, dict[str, Any]]] = field(default_factory=dict)
    added: dict[RunKey, dict[str, dict[str, Any]]] = field(default_factory=dict)

    def follow(self, row: Trace, record: TraceRecord, result: RoutingResult) -> list[Delivery]:
        """A new structural span's outbox rows to its run's destinations beyond those its own rules
        kept; its ``destinations`` and ``routing`` columns say so. Nothing for a call."""
        if record.kind in CALL_KINDS:
            return []
        route = self.routes.get((record.team_id, record.run), {})
        own = {d.destination.name for d in result.kept}
        rows = []
        for name, entry in route.items():
            if name in own:
                continue
            row.destinations = [*row.destinations, name]
            row.routing = [*row.routing, _decision(name, entry)]
            rows.append(_delivery(record.team_id, row.pk, name, entry))
        return rows

    def backfill(self) -> list[int]:
        """Send the runs' already-stored structural spans to the destinations this batch added (after
        the batch's trace rows are inserted); the new outbox rows' ids. A span that already has a
        row for a destination (its own rule's, a fallback's, this batch's) keeps that one."""
        if not self.added:
            return []
        teams, runs, names, entries = [], [], [], []
        for (team_id, run_id), added in self.added.items():
            for name, entry in added.items():
                teams.append(team_id)
                runs.append(run_id)
                names.append(name)
                entries.append(Jsonb(entry, dumps=dumps))
        now = timezone.now()
        with connection.cursor() as cursor:
            cursor.execute(
                """
                WITH candidates AS (
                    SELECT t.team_id, t.id AS trace_id, t.run_id, a.name, a.entry
                    FROM unnest(%s::bigint[], %s::text[], %s::text[], %s::jsonb[]) AS a(team_id, run_id, name, entry)
                    JOIN traces_trace t ON t.team_id = a.team_id AND t.run_id = a.run_id
                    WHERE t.kind <> ALL(%s::text[])
                ), inserted AS (
                    INSERT INTO routing_delivery (team_id, trace_id, destination, spec, rule_name, status, attempts,
                        next_attempt_at, last_error, replay_count, created_at, updated_at)
                    SELECT team_id, trace_id, name, entry -> 'spec', entry ->> 'rule', %s, 0, %s, '', 0, %s, %s
                    FROM candidates
                    ON CONFLICT (trace_id, destination) DO NOTHING
                    RETURNING id, trace_id, destination
                )
                SELECT i.id, i.trace_id, i.destination, c.team_id, c.run_id
                FROM inserted i JOIN candidates c ON c.trace_id = i.trace_id AND c.name = i.destination
                """,
                [teams, runs, names, entries, sorted(CALL_KINDS), DeliveryStatus.PENDING, now, now, now],
            )
            inserted = cursor.fetchall()
            if not inserted:
                return []
            # The stored spans' own record of where they went.
            by_trace: dict[Any, tuple[list[str], list[dict[str, Any]]]] = defaultdict(lambda: ([], []))
            for _, trace_pk, name, team_id, run_id in inserted:
                by_trace[trace_pk][0].append(name)
                by_trace[trace_pk][1].append(_decision(name, self.added[(team_id, run_id)][name]))
            cursor.execute(
                """
                UPDATE traces_trace t SET destinations = t.destinations || u.names, routing = t.routing || u.decisions
                FROM unnest(%s::uuid[], %s::jsonb[], %s::jsonb[]) AS u(id, names, decisions)
                WHERE t.id = u.id
                """,
                [
                    list(by_trace),
                    [Jsonb(v[0], dumps=dumps) for v in by_trace.values()],
                    [Jsonb(v[1], dumps=dumps) for v in by_trace.values()],
                ],
            )
        return [row[0] for row in inserted]


def claim_runs(spans: Sequence[tuple[TraceRecord, RoutingResult]]) -> RunClaims:
    """Add what these new spans were routed to to their runs' destinations and lock the runs'
    rows until the transaction ends (call inside it, before the spans' rows are inserted)."""
    proposed: dict[RunKey, dict[str, dict[str, Any]]] = {}
    for record, result in spans:
        if not takes_part(record, result):
            continue
        dests = proposed.setdefault((record.team_id, record.run), {})
        for decision in result.kept:
            dests.setdefault(decision.destination.name, _entry(decision.destination, decision, record.trace_id))
    claims = RunClaims()
    if not proposed:
        return claims
    keys = sorted(proposed)  # one lock order for every writer: no deadlocks between batches
    now = timezone.now()
    with connection.cursor() as cursor:
        cursor.execute(
            """
            INSERT INTO delivery_run_route (team_id, run_id, destinations, created_at, updated_at)
            SELECT team_id, run_id, destinations, %s, %s
            FROM unnest(%s::bigint[], %s::text[], %s::jsonb[]) AS p(team_id, run_id, destinations)
            ON CONFLICT (team_id, run_id) DO UPDATE
                SET destinations = EXCLUDED.destinations || delivery_run_route.destinations,
                    updated_at = EXCLUDED.updated_at
            RETURNING team_id, run_id, destinations
            """,
            [
                now,
                now,
                [k[0] for k in keys],
                [k[1] for k in keys],
                [Jsonb(proposed[k], dumps=dumps) for k in keys],
            ],
        )
        for team_id, run_id, stored in cursor.fetchall():
            key = (team_id, run_id)
            destinations = (
                orjson.loads(stored) if isinstance(stored, str | bytes) else stored
            )  # Django reads jsonb as text
            mine = proposed[key]
            claims.routes[key] = destinations
            # Ours when the stored entry is the one this batch proposed (the first entry stays).
            added = {name: entry for name, entry in destinations.items() if mine.get(name, {}).get("by") == entry["by"]}
            if added:
                claims.added[key] = added
    return claims


def _entry(spec: DestinationSpec, decision: Any, by: str) -> dict[str, Any]:
    return {"spec": spec.as_dict(), "rule": decision.rule, "rate": decision.rate, "by": by}


def _decision(name: str, entry: Mapping[str, Any]) -> dict[str, Any]:
    """A follow decision in the shape of `routing.router.Decision.as_dict`."""
    return {
        "destination": name,
        "rule": entry["rule"],
        "kept": True,
        "rate": entry["rate"],
        "reason": follow_reason(entry),
    }


def _delivery(team_id: int, trace_pk: Any, name: str, entry: Mapping[str, Any]) -> Delivery:
    now = timezone.now()
    return build_row(
        Delivery,
        {
            "team_id": team_id,
            "trace_id": trace_pk,
            "destination": name,
            "spec": entry["spec"],
            "rule_name": entry["rule"],
            "status": DeliveryStatus.PENDING,
            "next_attempt_at": now,
            "created_at": now,
            "updated_at": now,
        },
    )
