"""What the integration's page shows of the settings in its config: environments and identity,
the quota with its usage now, the transform with a preview on a recent trace (before and after),
and the webhook's response validation."""

from __future__ import annotations

import json
from typing import Any

from django.apps import apps

from delivery.selectors import latest_trace_of_integration
from traces.models import Trace
from traces.records import TraceRecord

from ..models import Integration
from ..options.quota import WINDOWS, Quota, usage
from ..options.shaping import Shaping
from ..options.transform import operation_json, parse_transform

PREVIEW_FIELDS = ("environment", "user_id", "session_id", "tags", "metadata", "input", "output")
PREVIEW_MAX = 4000  # characters of each side shown


def _shown(record: TraceRecord) -> str:
    doc = {name: list(v) if isinstance(v := getattr(record, name), tuple) else v for name in PREVIEW_FIELDS}
    text = json.dumps(doc, indent=2, ensure_ascii=False, default=str)
    return text if len(text) <= PREVIEW_MAX else text[:PREVIEW_MAX] + "\n…"


def transform_preview(integration: Integration) -> dict[str, Any] | None:
    """A recent trace (the newest routed here, else the team's newest) as stored and as it would be
    sent here: None when the team has no trace yet."""
    trace_pk = latest_trace_of_integration(integration.team_id, integration.pk, integration.name)
    qs = Trace.objects.filter(team_id=integration.team_id)
    trace = qs.filter(pk=trace_pk).first() if trace_pk is not None else qs.order_by("-timestamp").first()
    if trace is None:
        return None
    record = TraceRecord.from_trace(trace)
    shaping = Shaping.of(integration.config or {})
    return {
        "trace_id": trace.trace_id,
        "before": _shown(record),
        "after": _shown(shaping.shape(record)),
        "refused": shaping.refusal(record),
    }


def integration_alerts(integration: Integration) -> list[Any]:
    """The team's alerts on this integration's deliveries (scope ``integration``: its name). By
    model name: the alerts app sits above the integrations' pages in the layers."""
    alert = apps.get_model("alerts", "Alert")
    return list(alert.objects.filter(team_id=integration.team_id, scope__integration=integration.name).order_by("name"))


def settings_view(integration: Integration) -> dict[str, Any]:
    config = integration.config or {}
    transform = parse_transform(config.get("transform"))
    quota = Quota.of(config)
    windows: list[dict[str, Any]] = []
    if quota is not None:
        used = usage(integration.pk, quota)
        for name, letter, _ in WINDOWS:
            if letter in quota.limits:
                windows.append(
                    {
                        "label": "in the last 60 s" if letter == "m" else "today (UTC)",
                        "limit": quota.limits[letter],
                        "used": None if used is None else used[name],
                    }
                )
    return {
        "environments": config.get("environments") or [],
        "environment_map": config.get("environment_map") or {},
        "send_user_id": config.get("send_user_id") is not False,
        "send_session_id": config.get("send_session_id") is not False,
        "transform": config.get("transform") or [],
        # In the order they are written (op, path, then the rest), not the order storage keeps.
        "transform_json": [json.dumps(operation_json(op), ensure_ascii=False) for op in transform],
        "quota": quota,
        "quota_windows": windows,
        "response_validation": json.dumps(config["response_validation"], ensure_ascii=False)
        if config.get("response_validation")
        else "",
        "alerts": integration_alerts(integration),
        "preview": transform_preview(integration) if config.get("transform") or config.get("environment_map") else None,
    }
