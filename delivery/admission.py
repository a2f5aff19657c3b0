"""Which claimed rows go out now, and as what: the integration's settings applied between the PII
policy and the exporter's encoding (`integrations.options`), for every exporter alike.

1. a trace whose environment the integration does not take is dropped (reason ``environment``);
2. the quota (`integrations.options.quota`): what it has no room for is held, sampled or dropped
   (reason ``quota``);
3. the rest are shaped: environment map, user and session ids, the transform.

An ad-hoc webhook (a rule's own URL, no integration) has none of these settings.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from integrations.options.quota import Quota, demand_fraction, kept_by_sample, take
from integrations.options.shaping import Shaping
from traces.records import TraceRecord

from .models import DropReason
from .states import DeliveryReport, drop, hold


@dataclass(frozen=True, slots=True)
class Admitted:
    rows: list[dict[str, Any]]
    records: list[TraceRecord]


def admit(
    rows: Sequence[dict[str, Any]],
    records: Sequence[TraceRecord],
    *,
    integration_id: int | None,
    config: Any,
    token: Any,
    report: DeliveryReport,
) -> Admitted:
    """``rows`` (claimed with ``token``) and their ``records``, in the same order → what is to be
    encoded and sent now; the others are dropped or held here."""
    if integration_id is None:
        return Admitted(list(rows), list(records))
    shaping = Shaping.of(config)
    kept_rows: list[dict[str, Any]] = []
    kept_records: list[TraceRecord] = []
    refused: dict[str, list[dict[str, Any]]] = {}
    for row, record in zip(rows, records, strict=True):
        why = shaping.refusal(record)
        if why is None:
            kept_rows.append(row)
            kept_records.append(record)
        else:
            refused.setdefault(why, []).append(row)
    for why, same in refused.items():
        drop(same, token, DropReason.ENVIRONMENT, why, integration_id, report)

    quota = Quota.of(config)
    if quota is not None and kept_rows:
        kept_rows, kept_records = _within_quota(kept_rows, kept_records, integration_id, quota, token, report)
    return Admitted(kept_rows, [shaping.shape(r) for r in kept_records])


def _within_quota(
    rows: list[dict[str, Any]],
    records: list[TraceRecord],
    integration_id: int,
    quota: Quota,
    token: Any,
    report: DeliveryReport,
) -> tuple[list[dict[str, Any]], list[TraceRecord]]:
    limits = ", ".join(f"{n} per {'minute' if w == 'm' else 'day'}" for w, n in quota.limits.items())
    pairs = list(zip(rows, records, strict=True))
    sampled_out: list[dict[str, Any]] = []
    if quota.over_quota == "sample":
        fraction = demand_fraction(integration_id, quota)
        sampled_out = [row for row, record in pairs if not kept_by_sample(record.trace_id, fraction)]
        pairs = [(row, record) for row, record in pairs if kept_by_sample(record.trace_id, fraction)]
    grant = take(integration_id, quota, len(pairs), demand=len(rows))
    if not grant.counted:
        hold([row for row, _ in pairs] + sampled_out, token, grant.retry_at, report)
        return [], []
    admitted, over = pairs[: grant.granted], [row for row, _ in pairs[grant.granted :]]
    if quota.over_quota == "delay":
        hold(over, token, grant.retry_at, report)
    else:
        note = "sampled out" if quota.over_quota == "sample" else "dropped"
        drop(sampled_out + over, token, DropReason.QUOTA, f"quota: over {limits}, {note}", integration_id, report)
    return [row for row, _ in admitted], [record for _, record in admitted]
