"""The feed's rows as the table shows them: each trace's display values worked out once, in Python.

The `row` partial of `traces/feed.html` only places these values. It used to be an include whose
every row ran a tag, a URL reversal, `floatformat`, `default`, `truncatechars` and three loops with
`forloop` counters: ~10 ms of CPU for 50 rows, half the page's; this is ~5 ms. The markup is unchanged
byte for byte (tests/dashboard/test_feed_rows.py renders both); the browser tests select by it.
"""

from __future__ import annotations

import html
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from django.template.defaultfilters import truncatechars
from django.urls import reverse
from django.utils.formats import localize
from django.utils.safestring import mark_safe

from accounts.templatetags.dashboard import timestamp
from config.jsoncodec import shown
from config.money import usd
from traces.models import CALL_KINDS, Status, Trace

META_CHIPS = 3  # metadata pairs shown per row
META_VALUE_CHARS = 24
STATUS_BADGES: dict[str, tuple[str, str]] = {
    Status.SUCCESS.value: ("badge-success", "Success"),
    Status.RATE_LIMITED.value: ("badge-warning", "Rate limited"),
}
FAILED_BADGE = ("badge-danger", "Failed")  # an error, or any status the feed does not know
# A span's kind as the pages name it (runtree.js has the same words).
KIND_LABELS = {
    "llm": "LLM",
    "embedding": "Embedding",
    "agent": "Agent",
    "tool": "Tool",
    "retrieval": "Retrieval",
    "chain": "Chain",
    "workflow": "Workflow",
    "guardrail": "Guardrail",
    "event": "Event",
    "other": "Other",
}
NONE = mark_safe('<span class="muted">—</span>')


@dataclass(frozen=True, slots=True)
class FeedRow:
    pk: uuid.UUID
    trace_id: str
    url: str
    time: str  # the `<time>` element, safe HTML (browser's time zone, UTC on hover)
    model: str
    kind: str  # `llm`, `embedding` (the calls) or a structural kind (docs/runs.md)
    name: str
    is_call: bool  # a structural span is never priced: its cost cell is "—", never "unpriced"
    environment: str
    run_url: str  # the run page at this span, for a span of a run of several ("" for a run of one)
    provider: str  # "—" when there is none
    total_tokens: int
    usage_estimated: bool
    cost: str | None  # "$0.0123" (config.money); None: unpriced
    latency_ms: int | None
    destinations: str  # safe HTML: a chip each, or a muted "—"
    status_class: str
    status_label: str
    chips: str  # safe HTML: the tags, then the first META_CHIPS metadata pairs (values cut), or a muted "—"
    is_new: bool  # arrived by the live poll


def feed_rows(traces: Iterable[Trace], *, new: bool = False) -> list[FeedRow]:
    return [feed_row(t, new=new) for t in traces]


def feed_row(t: Trace, *, new: bool = False) -> FeedRow:
    status_class, status_label = STATUS_BADGES.get(t.status, FAILED_BADGE)
    return FeedRow(
        pk=t.pk,
        trace_id=t.trace_id,
        url=reverse("trace-detail", args=[t.trace_id]),
        time=timestamp(t.timestamp),
        model=t.model,
        kind=t.kind,
        name=t.name,
        is_call=t.kind in CALL_KINDS,
        environment=t.environment,
        run_url=run_url(t),
        provider=t.provider or "—",
        total_tokens=t.total_tokens,
        usage_estimated=t.usage_estimated,
        cost=None if t.unpriced or t.cost is None else usd(t.cost),
        latency_ms=t.latency_ms,
        destinations=_destinations(t),
        status_class=status_class,
        status_label=status_label,
        chips=_chips(t),
        is_new=new,
    )


def run_url(t: Trace) -> str:
    """The run page opened at this span, when the trace is a span of a run of its own id (a record
    sent without `run_id` is a run of one, its `run_id` its own id: no link)."""
    if not t.run_id or t.run_id == t.trace_id:
        return ""
    return reverse("run-detail", args=[t.run_id]) + "?span=" + quote(t.trace_id, safe="/")


# The chips are what the template's loops made, value by value: a tag or destination is shown as
# `{{ value }}` shows it, a metadata value as `{{ value|as_shown }}` does (JSON, never Python's repr),
# iterating a non-list (never stored, but the columns are JSON) gives what `{% for %}` gives, and a
# metadata that is no object shows no pairs.


def _destinations(t: Trace) -> str:
    chips = "".join(f'<span class="chip">{_shown(d)}</span>' for d in t.destinations or ())
    return mark_safe(chips) if chips else NONE


def _chips(t: Trace) -> str:
    if not t.tags and not t.metadata:
        return NONE
    tags = "".join(f'<span class="chip chip-tag">{_shown(tag)}</span>' for tag in t.tags or ())
    pairs = list(t.metadata.items())[:META_CHIPS] if isinstance(t.metadata, dict) else []
    meta = "".join(
        f'<span class="chip chip-meta" title="metadata.{_shown(k)}">{_shown(k)}={_shown(_cut(shown(v)))}</span>'
        for k, v in pairs
    )
    return mark_safe(tags + meta)


def _cut(text: str) -> str:
    """`truncatechars:24`, which keeps a short ASCII text as it is: those skip its translated ellipsis
    and Unicode normalisation (most of its cost)."""
    if len(text) <= META_VALUE_CHARS and text.isascii():
        return text
    return truncatechars(text, META_VALUE_CHARS)


def _shown(value: Any) -> str:
    """A value as the template's `{{ value }}` renders it: localized, then escaped (Django's `escape`
    is `html.escape` of the text; a JSON value is never already safe HTML)."""
    return html.escape(str(localize(value)))
