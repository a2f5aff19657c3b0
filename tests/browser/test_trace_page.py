"""The trace page puts the conversation first (issue 23, item 4), in the browser: messages with a tool
call and its result at the top, a long system prompt folded, then cost, routing and deliveries; the
request and response as JSON folded below; the page at 1280 and 390 px."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from accounts.models import Role

from ..factories import MembershipFactory, TraceFactory, UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SYSTEM = "\n".join(f"{i}. Answer in one sentence, cite the tool you used, never guess a number." for i in range(1, 25))


@pytest.fixture
def person(team):
    return MembershipFactory(team=team, user=UserFactory(username="grace@example.com"), role=Role.MEMBER).user


def test_the_conversation_comes_first_and_long_parts_fold(page, sign_in, shoot, person, team):
    TraceFactory(
        team=team,
        trace_id="trc-weather",
        model="gpt-4o",
        tags=["beta", "checkout"],
        metadata={"sdk": {"name": "tracerelay", "version": "1.2"}, "ok": True},
        input={
            "model": "gpt-4o",
            "messages": [
                {"role": "system", "content": SYSTEM},
                {"role": "user", "content": "What is the weather in Paris, and should I take an umbrella?"},
                {"role": "assistant", "content": None, "tool_calls": [{"id": "call_1", "type": "function",
                 "function": {"name": "get_weather", "arguments": '{"city": "Paris", "unit": "celsius"}'}}]},
                {"role": "tool", "tool_call_id": "call_1", "content": '{"temp_c": 14, "sky": "light rain"}'},
            ],
        },
        output={"role": "assistant", "content": "14 °C with light rain in Paris (get_weather): take an umbrella."},
        routing=[{"destination": "langfuse", "rule": "all-to-langfuse", "kept": True, "rate": 1.0,
                  "reason": "matched rule 'all-to-langfuse'"}],
    )  # fmt: skip
    sign_in(page, person)
    page.goto("/traces/trc-weather")
    conversation = page.get_by_role("region", name="Conversation")
    expect(conversation.locator(".msg-role")).to_have_text(
        ["System", "User", "Assistant", "Tool result get_weather", "Assistant response"]
    )
    system = conversation.locator(".msg-system")
    expect(system.get_by_text("Show all 24 lines")).to_be_visible()
    expect(system.get_by_text("24. Answer in one sentence")).to_be_hidden()
    system.get_by_text("Show all 24 lines").click()
    expect(system.get_by_text("24. Answer in one sentence", exact=False)).to_be_visible()
    expect(conversation.locator(".tool-call pre")).to_have_text('{\n  "city": "Paris",\n  "unit": "celsius"\n}')

    # then cost, routing (the rule named once) and deliveries; the raw JSON folded at the end
    top = {name: page.get_by_role("heading", name=name, exact=True).bounding_box()["y"]
           for name in ("Conversation", "Cost", "Routing", "Deliveries")}  # fmt: skip
    assert top["Conversation"] < top["Cost"] <= top["Routing"] < top["Deliveries"]
    expect(page.get_by_role("region", name="Routing").get_by_text("all-to-langfuse")).to_have_count(1)
    expect(page.get_by_role("heading", name="Request", exact=True)).to_be_hidden()
    page.locator("#raw-json > summary").click()
    expect(page.get_by_role("heading", name="Request", exact=True)).to_be_visible()
    shoot(page, "trace-conversation")


def test_the_cost_card_breaks_a_cached_call_down_by_part(page, sign_in, shoot, person, team):
    from traces import pricing
    from traces.usage import TokenDetails

    usage = {"prompt_tokens": 12_000, "completion_tokens": 900}
    details = TokenDetails(cached_tokens=9_000, cache_write_tokens=2_000, reasoning_tokens=300)
    priced = pricing.price(model="claude-sonnet-4-5", provider="anthropic", **usage, details=details)
    TraceFactory(team=team, trace_id="trc-cached", model="claude-sonnet-4-5", provider="anthropic", **usage,
                 **details.as_dict(), cost=priced.cost, price_source="genai-prices", price_version="0.2.3",
                 input={"messages": [{"role": "user", "content": "Summarise the contract."}]},
                 output={"role": "assistant", "content": "It renews yearly."})  # fmt: skip
    sign_in(page, person)
    page.goto("/traces/trc-cached")
    table = page.get_by_role("table", name="Cost breakdown")
    expect(table.locator("tbody td:first-child")).to_have_text(["Input", "Cache write", "Cached input", "Output"])
    expect(table.locator("tbody td.num").nth(0)).to_have_text("1,000")
    expect(page.get_by_text("Output includes 300 reasoning tokens, at the output rate.")).to_be_visible()
    page.get_by_role("heading", name="Cost", exact=True).scroll_into_view_if_needed()
    shoot(page, "trace-cost-breakdown")
