"""The feed's rows (`traces/views/rows.py` and the `row` partial of `traces/feed.html`) render byte for
byte what the former per-row include rendered, on a varied set of traces: the browser tests and the
htmx swaps select by this markup."""

from __future__ import annotations

import random
import uuid
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal

import pytest
from django.template import Context, Template
from django.template.loader import render_to_string

from traces.filters import TraceFilter
from traces.models import Trace
from traces.selectors import FLOOR_CURSOR, trace_page
from traces.views.rows import feed_row

from ..factories import TraceFactory

# templates/traces/_row.html as it was, the reference markup (and the link to a span's run since).
FORMER_ROW = """{% load dashboard %}<tr class="feed-row{% if new %} is-new{% endif %}" id="t-{{ t.pk }}">
  <td class="nowrap"><a class="row-link" href="{% url 'trace-detail' t.trace_id %}" aria-label="Open trace {{ t.trace_id }}">{% timestamp t.timestamp %}</a></td>
  <td><code>{{ t.model }}</code>{% if t.environment %} <span class="badge badge-neutral hide-narrow">{{ t.environment }}</span>{% endif %}{% if t.run_id and t.run_id != t.trace_id %} <a class="chip chip-run" href="{% url 'run-detail' t.run_id %}?span={{ t.trace_id|urlencode }}" title="Open the run this span belongs to">run</a>{% endif %}</td>
  <td class="hide-narrow">{{ t.provider|default:"—" }}</td>
  <td class="num hide-narrow">{{ t.total_tokens }}{% if t.usage_estimated %} <abbr class="flag" title="Usage was missing: tokens are estimated">est.</abbr>{% endif %}</td>
  <td class="num">{% if t.unpriced or t.cost is None %}<span class="muted">unpriced</span>{% else %}{{ t.cost|usd }}{% endif %}</td>
  <td class="num hide-narrow">{% if t.latency_ms is not None %}{{ t.latency_ms }} ms{% else %}—{% endif %}</td>
  <td class="hide-narrow">{% for d in t.destinations %}<span class="chip">{{ d }}</span>{% empty %}<span class="muted">—</span>{% endfor %}</td>
  <td>{% if t.status == "success" %}<span class="badge badge-success">Success</span>{% elif t.status == "rate_limited" %}<span class="badge badge-warning">Rate limited</span>{% else %}<span class="badge badge-danger">Failed</span>{% endif %}</td>
  <td class="hide-narrow tags-cell">{% for tag in t.tags %}<span class="chip chip-tag">{{ tag }}</span>{% endfor %}{% for k, v in t.metadata.items %}{% if forloop.counter <= 3 %}<span class="chip chip-meta" title="metadata.{{ k }}">{{ k }}={{ v|as_shown|truncatechars:24 }}</span>{% endif %}{% endfor %}{% if not t.tags and not t.metadata %}<span class="muted">—</span>{% endif %}</td>
</tr>
"""  # noqa: E501

COSTS = [None, Decimal("0"), Decimal("0.0123"), Decimal("0.0000001234"), Decimal("0.0000004999"), Decimal("1234.5"),
         Decimal("99999999.9999999999"), Decimal("0.0000005000")]  # fmt: skip
METADATA = [
    {},
    {"plan": "pro"},
    {"a": 1, "b": 2.5, "c": True, "d": None, "e": "fifth, never shown"},
    {"long": "x" * 30, "exact": "y" * 24, "html": "<b>&\"'</b>", "nested": {"k": [1, 2]}},
    {"unicode": "日本語のテキストはとても長いのでここで切られるはずです", "list": ["a", "b"]},
    ["not", "an", "object"],
]
TAGS = [[], ["beta"], ["a", "<b>", "c&d"], [1, None, True], "text"]
DESTINATIONS = [[], ["langfuse"], ["datadog", "<hook>", "a&b"]]
STATUSES = ["success", "error", "rate_limited", "something-else"]
ZONES = [UTC, timezone(timedelta(hours=5, minutes=30)), timezone(timedelta(hours=-8))]


def _render_both(trace: Trace, *, new: bool) -> tuple[str, str]:
    former = Template(FORMER_ROW).render(Context({"t": trace, "new": new}))
    now = render_to_string("traces/feed.html#row", {"row": feed_row(trace, new=new)})
    return former, now


def _varied(rng: random.Random, i: int) -> dict[str, object]:
    return {
        "trace_id": rng.choice([f"trc_{i}", f"a b&c <{i}>", f"ünï-{i}", f"q?x=1#{i}"]),
        "run_id": rng.choice(["", f"trc_{i}", "run-1", "r/u n&<x>"]),
        "model": rng.choice(["gpt-4o", "<script>alert(1)</script>", "claude \"3\" 'x'"]),
        "environment": rng.choice(["", "production", "<dev>"]),
        "provider": rng.choice(["", "openai", "a&b"]),
        "total_tokens": rng.choice([0, 7, 1_234_567]),
        "usage_estimated": rng.random() < 0.3,
        "cost": rng.choice(COSTS),
        "unpriced": rng.random() < 0.2,
        "latency_ms": rng.choice([None, 0, 1, 98_765]),
        "destinations": rng.choice(DESTINATIONS),
        "status": rng.choice(STATUSES),
        "tags": rng.choice(TAGS),
        "metadata": rng.choice(METADATA),
        "timestamp": datetime(2026, 11, 26, 12, 34, 56, rng.choice([0, 123456]), tzinfo=rng.choice(ZONES)),
    }


def test_it_renders_the_former_markup_for_varied_traces():
    rng = random.Random(9)
    for i in range(300):
        trace = Trace(id=uuid.UUID(int=rng.getrandbits(128)), **_varied(rng, i))
        new = rng.random() < 0.5
        former, now = _render_both(trace, new=new)
        assert now == former, (i, trace.__dict__)


@pytest.mark.django_db
def test_it_renders_the_former_markup_for_stored_traces(team):
    # What the feed really reads: the stored values (costs with 10 decimal places), fields deferred.
    rng = random.Random(11)
    for i in range(60):
        values = _varied(rng, i)
        if values["status"] == "something-else" or not isinstance(values["tags"], list):
            values["status"], values["tags"] = "error", []  # what the database would refuse or never hold
        TraceFactory(team=team, **values)
    rows, _ = trace_page(team_id=team.pk, trace_filter=TraceFilter(), limit=60)
    assert len(rows) == 60
    for trace in rows:
        former, now = _render_both(trace, new=False)
        assert now == former, trace.trace_id


@pytest.mark.django_db
def test_the_feed_page_and_the_live_poll_show_the_rows(as_role, team):
    TraceFactory(team=team, trace_id="shown", cost=Decimal("0.0123"), tags=["beta"], metadata={"plan": "pro"})
    client = as_role("viewer")
    trace = Trace.objects.get(trace_id="shown")
    assert _render_both(trace, new=False)[0] in client.get("/traces").content.decode()
    poll = client.get(f"/traces/live?after={FLOOR_CURSOR}").content.decode()
    assert _render_both(trace, new=True)[0] in poll and 'class="feed-row is-new"' in poll


@pytest.mark.django_db
def test_metadata_values_read_as_json_and_small_costs_keep_their_digits(as_role, team):
    TraceFactory(
        team=team,
        cost=Decimal("0.0000035"),
        unpriced=False,
        tags=[],
        metadata={"sdk": {"name": "tracerelay"}, "ok": True, "none": None, "plan": "pro"},
    )
    text = as_role("viewer").get("/traces").content.decode()
    assert "sdk={&quot;name&quot;: &quot;tracerelay&quot;}</span>" in text  # JSON, not {'name': …}
    assert "ok=true</span>" in text and "none=null</span>" in text
    assert "&#x27;name&#x27;" not in text and "True" not in text
    assert '<td class="num">$0.0000035</td>' in text  # not "$0.000004" or "$0."
