"""Which rows go out together: a batch once formed is re-sent whole, new rows are chunked.

A batch is formed when rows are claimed to be sent: the claim stamps them with a fresh
``batch_id``. Whatever later sends those rows again (a retry after a transient failure, another
worker taking over from one that died mid-send, a replay of the whole dead batch) re-forms that
batch from its stored id: the same rows, in one request. So the receiver gets the same set of
traces again, and every id the exporters derive from that set (the webhook's delivery id,
``Idempotency-Key``) is the one it saw the first time.

A batch can only be re-formed from the members that are still waiting. When some have left it
(dead-lettered or handed to a fallback because they ran out of attempts earlier than the others,
or one row of a dead batch is replayed alone) the rest are a smaller set, sent as a new batch:
the webhook's id is then new too (it stands for the set), and the receiver may already hold some
of those traces under the old id. docs/destinations/webhook.md says so.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from .models import Delivery, DeliveryStatus
from .states import EARLY_SLACK

# What the engine reads of each row.
ROW_FIELDS = (
    "id",
    "team_id",
    "trace_id",
    "destination",
    "spec",
    "rule_name",
    "next_attempt_at",
    "attempts",
    "batch_id",
)

# A unit of sending: the batch id to re-send under (None: a new batch), and its rows.
Unit = tuple[uuid.UUID | None, list[dict[str, Any]]]


def with_batch_mates(due: list[dict[str, Any]], now: datetime) -> list[dict[str, Any]]:
    """``due`` plus the other waiting members of every batch among them (a task may carry only
    part of a batch: the ids were published in chunks, or by two different paths).

    A batch one of whose waiting members is not due yet cannot be re-formed now: its due members
    lose their batch id here and are sent as new rows.
    """
    batch_ids = {r["batch_id"] for r in due if r["batch_id"] is not None}
    if not batch_ids:
        return due
    seen = {r["id"] for r in due}
    out = list(due)
    broken: set[uuid.UUID] = set()
    # The `delivery_batch_waiting` partial index: pending rows that carry a batch id.
    mates = Delivery.objects.filter(batch_id__in=batch_ids, status=DeliveryStatus.PENDING).values(*ROW_FIELDS)
    for mate in mates:
        if mate["id"] in seen:
            continue
        if mate["next_attempt_at"] > now + EARLY_SLACK:
            broken.add(mate["batch_id"])
            continue
        seen.add(mate["id"])
        out.append(mate)
    for row in out:
        if row["batch_id"] in broken:
            row["batch_id"] = None
    return out


def units(rows: Iterable[dict[str, Any]], size: int) -> list[Unit]:
    """The requests to send ``rows`` in (one destination): each stored batch whole, then the new
    rows in chunks of ``size``. A stored batch larger than ``size`` (the destination's batch limit
    went down since) is split into new batches."""
    stored: dict[uuid.UUID, list[dict[str, Any]]] = defaultdict(list)
    fresh: list[dict[str, Any]] = []
    for row in rows:
        if row["batch_id"] is None:
            fresh.append(row)
        else:
            stored[row["batch_id"]].append(row)
    out: list[Unit] = []
    for batch_id, members in stored.items():
        if len(members) <= size:
            out.append((batch_id, members))
        else:
            fresh.extend(members)
    out.extend((None, list(chunk)) for chunk in chunks(fresh, size))
    return out


def chunks(items: Sequence[Any], size: int) -> Iterable[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]
