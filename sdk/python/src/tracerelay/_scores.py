"""`tracerelay.score(...)`: a score or a piece of feedback on a trace or a run, posted now
(docs/sdk.md#scores)."""

from __future__ import annotations

import json
import logging
from typing import Any
from urllib.parse import quote

from . import _state
from ._transport import Transport

log = logging.getLogger("tracerelay")


def score(
    trace_id: str | None = None,
    name: str | None = None,
    value: float | bool | str | None = None,
    *,
    run_id: str | None = None,
    comment: str | None = None,
    source: str | None = None,
    timeout: float = 5.0,
) -> dict[str, Any] | None:
    """Post a score on ``trace_id``, or with ``run_id=`` on a run (its root span): a number, a boolean
    or a category. The stored score as the server answered it, or None when it could not be stored
    (logged, never raised: this runs in the application). Unlike traces it is sent at once, on its
    own connection: a user's thumbs up is worth waiting a few milliseconds for."""
    if (trace_id is None) == (run_id is None):
        log.warning("tracerelay.score: give a trace_id or a run_id= (one of them); score %r not sent", name)
        return None
    if name is None or value is None:
        log.warning("tracerelay.score: a score needs a name and a value; not sent")
        return None
    if trace_id is not None:
        path = f"/api/v1/traces/{quote(str(trace_id), safe='')}/scores"
    else:
        path = f"/api/v1/runs/{quote(str(run_id), safe='')}/scores"
    client = _state.client
    if client is None:
        log.warning("tracerelay.score: call tracerelay.init first; score %r not sent", name)
        return None
    body: dict[str, Any] = {"name": name, "value": value}
    if comment is not None:
        body["comment"] = comment
    if source is not None:
        body["source"] = source
    try:
        raw = json.dumps(body, allow_nan=False).encode()
    except (TypeError, ValueError) as exc:
        log.warning("tracerelay.score: %r cannot be sent as JSON (%s); not sent", value, exc)
        return None
    config = client.config
    transport = Transport(config.base_url, config.api_key, timeout=timeout, compress=False)
    try:
        answer = transport.request("POST", path, raw)
    except Exception as exc:  # never into the application
        log.warning("tracerelay.score: not sent: %s", exc)
        return None
    finally:
        transport.close()
    if answer.status == 201 and isinstance(answer.body, dict):
        return answer.body
    detail = answer.body.get("errors") if isinstance(answer.body, dict) else answer.error
    log.warning("tracerelay.score: the server refused score %r (HTTP %s): %s", name, answer.status, detail)
    return None
