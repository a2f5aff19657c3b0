"""The feed's rows as the table shows them: each trace's display values worked out once, in Python.

The `row` partial of `traces/feed.html` only places these values (a template include per row, with
its tags, URL reversals and loops, cost about twice as much CPU for 50 rows).

One line per trace: tags and metadata collapse to the first chip and a "+N" button whose popover
lists them all (on hover or focus with app.js, on a click without it); destinations likewise. The
environment shows only when it is not the team's usual one (`traces.selectors.usual_environment`).
Metadata values are JSON (`config.jsoncodec.shown`), never Python's repr.
"""

from __future__ import annotations

import html
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from django.template.defaultfilters import truncatechars
from django.urls import Resolver404, resolve, reverse
from django.utils.formats import localize
from django.utils.safestring import mark_safe

from accounts.templatetags.dashboard import timestamp
from config.jsoncodec import shown
from config.money import usd
from traces.models import CALL_KINDS, FeedColumn, Status, Trace

from .conversation import prompt_text

META_VALUE_CHARS = 24  # a metadata value in the row's chip
POP_VALUE_CHARS = 200  # in the popover (the trace page shows it whole)
PROMPT_CHARS = 90
ID_CHARS = 28  # a run, session or user id in its column
STATUS_BADGES: dict[str, tuple[str, str, str]] = {  # class, label, the label on a phone
    Status.SUCCESS.value: ("badge-success", "Success", "OK"),
    Status.RATE_LIMITED.value: ("badge-warning", "Rate limited", "Limited"),
}
FAILED_BADGE = ("badge-danger", "Failed", "Failed")  # an error, or any status the feed does not know
NONE = mark_safe('<span class="muted">—</span>')
FIXED_COLUMNS = 9  # the columns every feed shows; the chosen ones (FeedColumn) come on top


@dataclass(frozen=True, slots=True)
class FeedRow:
    pk: uuid.UUID
    trace_id: str
    url: str
    time: str  # the `<time>` element, safe HTML (browser's time zone, short; UTC on hover)
    model: str
    kind: str  # `llm`, `embedding` (the calls) or a structural kind (docs/runs.md)
    name: str
    is_call: bool  # a structural span is never priced: its cost cell is "—", never "unpriced"
    environment: str  # "" unless it differs from the team's usual environment
    run_url: str  # the run page at this span, for a span of a run of several ("" for a run of one)
    provider: str  # "—" when there is none
    total_tokens: int
    usage_estimated: bool
    cost: str | None  # "$0.0123" (config.money); None: unpriced
    latency_ms: int | None
    destinations: str  # safe HTML: the first chip and "+N", or a muted "—"
    status_class: str
    status_label: str
    status_short: str  # shown instead on a phone, beside the time, model and cost
    chips: str  # safe HTML: the first tag or metadata pair and "+N" (all in its popover), or a muted "—"
    extra: str  # safe HTML: the <td>s of the chosen columns, in FeedColumn order
    is_new: bool  # arrived by the live poll


def feed_rows(
    traces: Iterable[Trace], *, new: bool = False, usual_environment: str = "", columns: Sequence[str] = ()
) -> list[FeedRow]:
    return [feed_row(t, new=new, usual_environment=usual_environment, columns=columns) for t in traces]


def feed_row(t: Trace, *, new: bool = False, usual_environment: str = "", columns: Sequence[str] = ()) -> FeedRow:
    status_class, status_label, status_short = STATUS_BADGES.get(t.status, FAILED_BADGE)
    pop = f"pop-{t.pk.hex}"
    return FeedRow(
        pk=t.pk,
        trace_id=t.trace_id,
        url=reverse("trace-detail", args=[t.trace_id]),
        time=timestamp(t.timestamp, short=True),
        model=t.model,
        kind=t.kind,
        name=t.name,
        is_call=t.kind in CALL_KINDS,
        environment=t.environment if t.environment != usual_environment else "",
        run_url=run_url(t),
        provider=t.provider or "—",
        total_tokens=t.total_tokens,
        usage_estimated=t.usage_estimated,
        cost=None if t.unpriced or t.cost is None else usd(t.cost),
        latency_ms=t.latency_ms,
        destinations=_destinations(t, f"{pop}-d"),
        status_class=status_class,
        status_label=status_label,
        status_short=status_short,
        chips=_chips(t, f"{pop}-m"),
        extra=mark_safe("".join(_cell(t, column) for column in columns)),
        is_new=new,
    )


def run_url(t: Trace) -> str:
    """The run page opened at this span, when the trace is a span of a run of its own id (a record
    sent without `run_id` is a run of one, its `run_id` its own id: no link)."""
    if not t.run_id or t.run_id == t.trace_id:
        return ""
    return reverse("run-detail", args=[t.run_id]) + "?span=" + quote(t.trace_id, safe="/")


def _items(value: Any) -> list[Any]:
    """A JSON list column's items; a stored non-list (never written by us) is one item."""
    if isinstance(value, (list, tuple)):
        return list(value)
    return [value] if value not in (None, "", {}) else []


def _destinations(t: Trace, pop_id: str) -> str:
    chips = [f'<span class="chip">{_shown(d)}</span>' for d in _items(t.destinations)]
    return _collapsed(chips, chips, pop_id, "destinations")


def _chips(t: Trace, pop_id: str) -> str:
    tags = _items(t.tags)
    pairs = list(t.metadata.items()) if isinstance(t.metadata, dict) else []
    short = [f'<span class="chip chip-tag">{_shown(tag)}</span>' for tag in tags] + [
        _pair(k, v, META_VALUE_CHARS) for k, v in pairs
    ]
    full = [f'<span class="chip chip-tag">{_shown(tag)}</span>' for tag in tags] + [
        _pair(k, v, POP_VALUE_CHARS) for k, v in pairs
    ]
    return _collapsed(short, full, pop_id, "tags and metadata")


def _pair(key: Any, value: Any, limit: int) -> str:
    k = _shown(key)
    return f'<span class="chip chip-meta" title="metadata.{k}">{k}={_shown(_cut(shown(value), limit))}</span>'


def _collapsed(short: list[str], full: list[str], pop_id: str, what: str) -> str:
    """The first chip; with more, a "+N" button and a popover of every chip (`popover`: a click opens
    it without JavaScript; app.js opens it on hover and focus and places it under the button)."""
    if not short:
        return NONE
    if len(short) == 1:
        return mark_safe(short[0])
    more = len(short) - 1
    return mark_safe(
        f"{short[0]}"
        f'<button type="button" class="chip chip-more" popovertarget="{pop_id}" '
        f'aria-label="{more} more: show all {len(short)} {what}">+{more}</button>'
        f'<div class="chips-pop" id="{pop_id}" popover><p class="chips-pop-title">{len(short)} {what}</p>'
        f"{''.join(full)}</div>"
    )


def _cell(t: Trace, column: str) -> str:
    if column == FeedColumn.PROMPT:
        text = " ".join(prompt_text(t.input).split()) if "input" in t.__dict__ else ""
        if not text:
            return f'<td class="prompt-cell">{NONE}</td>'
        whole, cut = _shown(_cut(text, 500)), _shown(_cut(text, PROMPT_CHARS))
        return f'<td class="prompt-cell"><span class="cut" title="{whole}">{cut}</span></td>'
    if column == FeedColumn.USER:
        return _id_cell(t.user_id, reverse("trace-feed") + "?user_id=" + quote(t.user_id, safe=""))
    if column == FeedColumn.SESSION:
        return _id_cell(t.session_id, reverse("trace-session", args=[t.session_id]) if t.session_id else "")
    if column == FeedColumn.SERVICE:
        return _id_cell(t.service_name, "")
    if column == FeedColumn.RUN:
        return _id_cell(t.run_id, _run_url(t.run_id))
    raise ValueError(f"not a feed column: {column}")


def _id_cell(value: str, url: str) -> str:
    if not value:
        return f'<td class="id-col">{NONE}</td>'
    text = _shown(_cut(value, ID_CHARS))
    inner = f'<a class="cut" href="{html.escape(url)}">{text}</a>' if url else f'<span class="cut">{text}</span>'
    return f'<td class="id-col" title="{_shown(value)}">{inner}</td>'


_RUN_PATH = "/runs/{}"


def _run_url(run_id: str) -> str:
    """`/runs/<run_id>` (issue 22's run page) once that page exists; until then the id is plain text."""
    if not run_id:
        return ""
    path = _RUN_PATH.format(quote(run_id, safe=""))
    try:
        resolve(path)
    except Resolver404:
        return ""
    return path


def _cut(text: str, limit: int) -> str:
    """`truncatechars`, which keeps a short ASCII text as it is: those skip its translated ellipsis
    and Unicode normalisation (most of its cost)."""
    if len(text) <= limit and text.isascii():
        return text
    return truncatechars(text, limit)


def _shown(value: Any) -> str:
    """A value as the template's `{{ value }}` renders it: localized, then escaped (Django's `escape`
    is `html.escape` of the text; a JSON value is never already safe HTML)."""
    return html.escape(str(localize(value)))
