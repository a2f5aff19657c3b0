"""The run pages in the browser: an agent run of realistic shape (an agent over chat calls, tools and a
retrieval, one tool failing deep down) opened from `/runs`: the tree beside its waterfall, a span's
conversation beside the tree, the keyboard, search by name, the next failure; and a run of 10,000
spans that opens with only the rows on screen in the page, scrolls to its end and searches.
Screenshots at 1280 and 390 px."""

from __future__ import annotations

import re
from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from accounts.models import Role
from traces.models import Trace
from traces.runs.summary import rebuild

from ..factories import MembershipFactory, UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def viewer_user(team):
    return MembershipFactory(team=team, user=UserFactory(username="vera@example.com"), role=Role.VIEWER).user


def _spans(team, run_id, specs, *, base=None):
    """(id, parent, kind, name, model, start ms, duration ms, extra) → stored spans of one run."""
    base = base or timezone.now() - timedelta(minutes=3)
    rows = []
    for span_id, parent, kind, name, model, start, duration, extra in specs:
        call = kind in ("llm", "embedding")
        fields = {
            "prompt_tokens": 120 if call else 0,
            "completion_tokens": 40 if call else 0,
            "total_tokens": 160 if call else 0,
            "cost": Decimal("0.00042") if call else None,
            "provider": "openai" if call else "",
            **extra,
        }
        rows.append(
            Trace(
                team=team,
                trace_id=span_id,
                run_id=run_id,
                parent_id=parent,
                kind=kind,
                name=name,
                model=model,
                timestamp=base + timedelta(milliseconds=start),
                latency_ms=duration,
                session_id="conv-7",
                **fields,
            )  # fmt: skip
        )
    Trace.objects.bulk_create(rows, batch_size=2000)
    rebuild(team.pk, [run_id])  # the run's summary row, which ingest keeps


CHAT_IN = [
    {"role": "system", "content": "You are a travel assistant."},
    {"role": "user", "content": "Find me a hotel in Lisbon for next weekend."},
]
ARGS = '{"city": "Lisbon"}'
CHAT_OUT = {
    "choices": [
        {
            "message": {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_9",
                        "type": "function",
                        "function": {"name": "hotel_search", "arguments": '{"city": "Lisbon"}'},
                    }
                ],
            }
        }
    ]
}
FAILED = {"status": "error", "error_type": "TimeoutError", "error_message": "booking API timed out after 10 s"}


def _agent_run(team):
    _spans(team, "run-lisbon", [
        ("root", "", "agent", "travel_agent", "", 0, 9200, {"input": {"task": "hotel in Lisbon"}}),
        ("plan", "root", "llm", "plan", "gpt-4o", 50, 1400, {"input": CHAT_IN, "output": CHAT_OUT}),
        ("guard", "root", "guardrail", "input_policy", "", 10, 30, {}),
        ("search", "root", "tool", "hotel_search", "", 1500, 2100, {"input": {"city": "X"}, "output": {"hotels": 12}}),
        ("embed", "search", "embedding", "embed_query", "text-embedding-3-small", 1520, 90, {}),
        ("retrieve", "search", "retrieval", "vector_lookup", "", 1620, 400, {"output": [{"id": "h1"}, {"id": "h2"}]}),
        ("rank", "search", "chain", "rank_results", "", 2050, 1500, {}),
        ("rank-llm", "rank", "llm", "rerank", "gpt-4o-mini", 2100, 1300, {"input": "Rank these", "output": "h2"}),
        ("book", "root", "tool", "book_hotel", "", 3700, 5200, {}),
        ("book-api", "book", "tool", "booking_api", "", 3750, 5100, FAILED),
        ("answer", "root", "llm", "answer", "claude-3-5-haiku", 8950, 240, {
            "provider": "anthropic", "unpriced": True, "cost": None,
            "input": {"system": "Be kind.", "messages": [{"role": "user", "content": "Summarise"}]},
            "output": {"role": "assistant", "content": [{"type": "text", "text": "I could not book it."}]}}),
    ])  # fmt: skip


def test_an_agent_run_opens_as_a_tree_with_its_timeline(page, sign_in, shoot, viewer_user, team):
    _agent_run(team)
    sign_in(page, viewer_user)
    page.goto("/runs")
    expect(page.get_by_role("link", name="Open run travel_agent")).to_be_visible()
    shoot(page, "runs-list")
    page.get_by_role("link", name="Open run travel_agent").click()
    expect(page).to_have_url(re.compile(r"/runs/run-lisbon$"))
    tree = page.get_by_role("tree", name="Spans of the run")
    expect(tree).to_be_visible()
    # The root opens on the page: its input beside the tree, its subtree's totals above.
    expect(page.locator("#span-detail")).to_contain_text("hotel in Lisbon")
    expect(page.locator("#span-rollup")).to_contain_text("11 spans")
    expect(page.locator("#span-rollup")).to_contain_text("4 LLM calls")
    # Every level-2 span shows (the root's children open); deeper ones start closed past level 2.
    for name in ("plan", "input_policy", "hotel_search", "book_hotel", "answer"):
        expect(page.get_by_role("treeitem", name=re.compile(rf"^\w+ {name}\b"))).to_be_visible()
    expect(page.get_by_role("treeitem", name=re.compile(r"^Tool booking_api"))).to_be_visible()  # level 3
    # The failed path is marked: the failed span, and each span above it.
    failed = page.get_by_role("treeitem", name=re.compile(r"^Tool booking_api.*failed"))
    expect(failed).to_have_class(re.compile("is-failed"))
    expect(page.get_by_role("treeitem", name=re.compile(r"^Tool book_hotel.*a span below failed"))).to_have_class(
        re.compile("is-failed-path")
    )
    # The waterfall: bars to scale (book_hotel starts ~40% in and lasts ~57% of the run).
    bar = page.get_by_role("treeitem", name=re.compile(r"^Tool book_hotel")).locator(".rt-bar")
    style = bar.get_attribute("style") or ""
    left, width = (float(x) for x in re.findall(r"([\d.]+)%", style))
    assert 39 < left < 42 and 55 < width < 58, style

    # A chat span: its conversation, the tool it calls.
    page.get_by_role("treeitem", name=re.compile(r"^LLM plan")).click()
    detail = page.locator("#span-detail")
    expect(detail).to_contain_text("Find me a hotel in Lisbon")
    expect(detail).to_contain_text("Calls hotel_search")
    expect(page).to_have_url(re.compile(r"\?span=plan$"))
    shoot(page, "run-agent")

    # The keyboard: the tree is one tab stop; arrows move, Enter shows the span.
    tree.focus()
    page.keyboard.press("Home")
    page.keyboard.press("ArrowDown")  # the root's first child in time order: input_policy (10 ms)
    page.keyboard.press("ArrowDown")  # plan (50 ms)
    page.keyboard.press("ArrowDown")  # hotel_search (open: level 2)
    page.keyboard.press("ArrowLeft")  # close it
    expect(page.get_by_role("treeitem", name=re.compile(r"^Embed embed_query"))).to_have_count(0)
    page.keyboard.press("ArrowRight")  # open it
    page.keyboard.press("ArrowRight")  # its first child, embed_query
    page.keyboard.press("Enter")
    expect(detail).to_contain_text("text-embedding-3-small")
    page.keyboard.press("ArrowLeft")  # back to its parent
    page.keyboard.press("Enter")
    expect(detail).to_contain_text('"hotels": 12')

    # Search by name: the match with its ancestors; Enter shows it.
    page.get_by_label("Search spans by name").fill("rerank")
    expect(page.locator("#run-search-count")).to_have_text("1 match")
    expect(page.get_by_role("treeitem")).to_have_count(4)  # travel_agent › hotel_search › rank_results › rerank
    page.get_by_label("Search spans by name").press("Enter")
    expect(detail).to_contain_text("Rank these")
    page.get_by_label("Search spans by name").press("Escape")
    # The next failure: opened, selected, its error shown.
    page.get_by_role("button", name="Next failure").click()
    expect(detail).to_contain_text("booking API timed out")
    # An unpriced call says so; a structural span never does.
    page.get_by_role("treeitem", name=re.compile(r"^LLM answer")).click()
    expect(detail).to_contain_text("unpriced")
    expect(detail).to_contain_text("I could not book it.")
    page.get_by_role("treeitem", name=re.compile(r"^Retrieval vector_lookup")).click()
    expect(detail).to_contain_text('"id": "h2"')
    expect(detail).not_to_contain_text("unpriced")
    shoot(page, "run-agent-retrieval")

    # A shared link opens at its span; the session lists the run.
    page.goto("/runs/run-lisbon?span=rank-llm")
    expect(page.locator("#span-detail")).to_contain_text("Rank these")
    expect(page.get_by_role("treeitem", name=re.compile(r"^LLM rerank"))).to_have_attribute("aria-selected", "true")
    page.goto("/sessions/conv-7")
    shoot(page, "session-runs")
    page.get_by_role("link", name="Open run travel_agent").click()
    expect(page.get_by_role("tree", name="Spans of the run")).to_be_visible()


def _big_run(team, count=10_000):
    """A root agent, 100 steps, each with a chat call and tools nesting four deep: 10,000 spans."""
    base = timezone.now() - timedelta(minutes=2)
    specs = [("s0", "", "agent", "research_agent", "", 0, count * 3, {})]
    n = 1
    while n < count:
        step = f"s{n}"
        specs.append((step, "s0", "chain", f"step {n}", "", n * 3, 250, {}))
        n += 1
        parent = step
        for depth in range(98):
            if n >= count:
                break
            kind = "llm" if depth % 3 == 0 or n == 7777 else "tool"
            extra = FAILED if n == 7777 else {}
            model = "gpt-4o-mini" if kind == "llm" else ""
            specs.append((f"s{n}", parent, kind, f"{kind} {n}", model, n * 3, 2, extra))
            if depth % 25 == 24:
                parent = f"s{n}"
            n += 1
    _spans(team, "run-big", specs, base=base)


def test_a_run_of_ten_thousand_spans_opens_scrolls_and_searches(page, sign_in, shoot, viewer_user, team):
    _big_run(team)
    sign_in(page, viewer_user)
    page.goto("/runs/run-big")
    expect(page.locator("#run-tree[data-ready]")).to_be_attached(timeout=20_000)
    marks = page.evaluate(
        "() => Object.fromEntries(performance.getEntriesByType('mark').map((m) => [m.name, Math.round(m.startTime)]))"
    )
    print(f"10,000 spans: {marks}")  # the bench (bench/run_page.py) measures this properly
    # Only what is on screen (and a few rows around) is in the page.
    rows = page.locator(".rt-row:not([hidden])")
    assert 5 < rows.count() < 80, rows.count()
    expect(page.locator(".rt-spacer")).to_have_attribute("style", re.compile(r"height: \d+px"))
    expect(page.locator("#span-rollup")).to_contain_text("10,000 spans")
    shoot(page, "run-10k")
    # Everything open: still only the rows on screen; End reaches the last span.
    page.get_by_role("button", name="Expand all").click()
    tree = page.get_by_role("tree", name="Spans of the run")
    height = int(re.search(r"height: (\d+)px", page.locator(".rt-spacer").get_attribute("style") or "").group(1))
    assert height == 10_000 * 32, height
    tree.focus()
    page.keyboard.press("End")
    expect(page.get_by_role("treeitem", name=re.compile(r"\btool 9999\b|\bllm 9999\b"))).to_be_visible()
    assert page.locator(".rt-row:not([hidden])").count() < 80
    # Search by name across all of it.
    page.get_by_label("Search spans by name").fill("llm 7777")
    expect(page.locator("#run-search-count")).to_have_text("1 match")
    page.get_by_label("Search spans by name").press("Enter")
    expect(page.locator("#span-detail")).to_contain_text("booking API timed out")
    page.get_by_label("Search spans by name").press("Escape")
    page.get_by_role("button", name="Collapse all").click()
    expect(page.locator(".rt-row:not([hidden])")).to_have_count(1)
