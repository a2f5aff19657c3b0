"""The trace page puts the conversation first (issue 23, item 4): the messages of each shape clients
and the proxy store (OpenAI chat with tool calls, Anthropic content blocks, the Responses API, plain
strings), then cost, routing and deliveries; the routing text names the deciding rule once; debug
bodies are formatted."""

from __future__ import annotations

import json

import pytest

from traces.views.detail import formatted_body, routing_line
from traces.views.messages import conversation

from ..factories import TraceFactory

OPENAI_INPUT = {
    "model": "gpt-4o",
    "messages": [
        {"role": "system", "content": "You are a weather bot."},
        {"role": "user", "content": "Weather in Paris?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": '{"temp_c": 14, "sky": "clouds"}'},
    ],
}
OPENAI_OUTPUT = {"role": "assistant", "content": "14 °C and cloudy in Paris."}

ANTHROPIC_INPUT = {
    "model": "claude-3-5-sonnet",
    "system": [{"type": "text", "text": "Be brief."}],
    "messages": [
        {"role": "user", "content": [{"type": "text", "text": "Look up order 42"}, {"type": "image", "source": {}}]},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Checking."},
                {"type": "tool_use", "id": "toolu_1", "name": "find_order", "input": {"id": 42}},
            ],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "shipped"}]},
    ],
}
ANTHROPIC_OUTPUT = {"role": "assistant", "content": [{"type": "text", "text": "Order 42 has shipped."}]}


def _shape(messages):
    return [(m.role, m.text, [(c.name, c.arguments) for c in m.tool_calls], m.tool_ref, m.reply) for m in messages]


def test_openai_chat_with_a_tool_call_and_its_result():
    assert _shape(conversation(OPENAI_INPUT, OPENAI_OUTPUT)) == [
        ("system", "You are a weather bot.", [], "", False),
        ("user", "Weather in Paris?", [], "", False),
        ("assistant", "", [("get_weather", '{\n  "city": "Paris"\n}')], "", False),
        ("tool", '{\n  "temp_c": 14,\n  "sky": "clouds"\n}', [], "get_weather", False),  # named, not "call_1"
        ("assistant", "14 °C and cloudy in Paris.", [], "", True),
    ]


def test_anthropic_blocks_tool_use_and_tool_result():
    assert _shape(conversation(ANTHROPIC_INPUT, ANTHROPIC_OUTPUT)) == [
        ("system", "Be brief.", [], "", False),
        ("user", "Look up order 42\n[image]", [], "", False),
        ("assistant", "Checking.", [("find_order", '{\n  "id": 42\n}')], "", False),
        ("tool", "shipped", [], "find_order", False),
        ("assistant", "Order 42 has shipped.", [], "", True),
    ]


def test_the_responses_api_and_a_whole_chat_response():
    request = {"instructions": "Be kind.", "input": "Hi"}
    output = [
        {"type": "reasoning", "summary": []},
        {"type": "function_call", "name": "lookup", "call_id": "c1", "arguments": "{}"},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Hello!"}]},
    ]
    assert _shape(conversation(request, output)) == [
        ("system", "Be kind.", [], "", False),
        ("user", "Hi", [], "", False),
        ("assistant", "", [("lookup", "{}")], "", True),
        ("assistant", "Hello!", [], "", True),
    ]
    chat = {"choices": [{"message": {"role": "assistant", "content": "Yes."}}]}
    assert _shape(conversation([{"role": "user", "content": "Ok?"}], chat))[-1] == ("assistant", "Yes.", [], "", True)
    assert _shape(conversation("plain prompt", "plain answer")) == [
        ("user", "plain prompt", [], "", False),
        ("assistant", "plain answer", [], "", True),
    ]


def test_what_is_no_conversation_gives_none():
    assert conversation(None, None) == []
    assert conversation({"embeddings": 3}, {"embeddings": 3, "dimensions": 1536}) == []
    assert conversation(42, True) == []


def test_a_long_message_is_folded_with_a_preview():
    (message,) = conversation({"system": "\n".join(f"rule {i}" for i in range(40)), "messages": []}, None)
    assert message.folded and message.lines == 40 and message.preview == "rule 0\nrule 1\nrule 2\nrule 3"


def test_the_routing_text_names_the_deciding_rule_once():
    reason = "matched rule 'prod', kept by sampling (0.1234 < rate 0.5)"
    kept = routing_line({"destination": "lf", "rule": "prod", "kept": True, "rate": 0.5, "reason": reason})
    assert kept["detail"] == "kept by sampling (0.1234 < rate 0.5)"
    plain = routing_line(
        {"destination": "lf", "rule": "prod", "kept": True, "rate": 1, "reason": "matched rule 'prod'"}
    )
    assert plain["detail"] == ""
    reason = "sampled out: 0.52 ≥ rate 0.1 (policy default 1 × rule 0.1 × destination 1)"
    out = routing_line({"destination": "dd", "rule": "dd", "kept": False, "rate": 0.1, "reason": reason})
    assert out["detail"] == "0.52 ≥ rate 0.1 (policy default 1 × rule 0.1 × destination 1)"
    assert routing_line({"destination": "x", "rule": None, "reason": "follows its run"})["detail"] == "follows its run"


def test_debug_bodies_are_formatted():
    assert formatted_body('{"a":1,"b":[1,2]}') == '{\n  "a": 1,\n  "b": [\n    1,\n    2\n  ]\n}'
    assert formatted_body('{"a":1}\n{"b":2}') == '{\n  "a": 1\n}\n{\n  "b": 2\n}'  # JSON lines
    assert formatted_body("not json") == "not json" and formatted_body("") == "" and formatted_body(None) is None


@pytest.mark.django_db
def test_the_page_shows_the_conversation_first_then_cost_routing_and_deliveries(as_role, team):
    TraceFactory(
        team=team,
        trace_id="conv",
        input=OPENAI_INPUT,
        output=OPENAI_OUTPUT,
        routing=[
            {"destination": "langfuse", "rule": "prod", "kept": True, "rate": 0.5,
             "reason": "matched rule 'prod', kept by sampling (0.1234 < rate 0.5)"},
        ],
    )  # fmt: skip
    text = as_role("viewer").get("/traces/conv").content.decode()
    order = [text.index(h) for h in ('id="conversation-title"', 'id="cost-title"', 'id="routing-title"',
                                     'id="deliveries-title"', 'id="request-title"')]  # fmt: skip
    assert order == sorted(order)
    conv = text[text.index('id="conversation-title"') : text.index('id="cost-title"')]
    assert conv.index("You are a weather bot.") < conv.index("Weather in Paris?") < conv.index("get_weather")
    assert "Tool result <code>get_weather</code>" in conv and "14 °C and cloudy in Paris." in conv
    routing = text[text.index('id="routing-title"') : text.index('id="deliveries-title"')]
    assert routing.count("prod") == 1  # the deciding rule, once
    assert "Kept by sampling (0.1234 &lt; rate 0.5)" in routing
    assert '<details class="raw-json" id="raw-json">' in text  # the JSON is there, folded


@pytest.mark.django_db
def test_the_debug_section_formats_recorded_bodies(as_role, team):
    from debugmode.models import DebugRecord

    trace = TraceFactory(team=team, trace_id="dbg")
    body = json.dumps({"batch": [{"id": "dbg", "model": "gpt-4o"}]}, separators=(",", ":"))
    exchange = {"method": "POST", "url": "http://sink/ingest", "status": 200, "duration_ms": 3,
                "request_headers": {"content-type": "application/json"}, "response_headers": {"x": "1"},
                "request_body": {"size": len(body), "truncated": False, "text": body},
                "response_body": {"size": 2, "truncated": False, "text": "ok"}}  # fmt: skip
    DebugRecord.objects.create(
        team=team, trace_id=trace.pk, kind="export", destination="sink",
        data={"platform": "webhook", "attempt": 1, "batch_size": 1, "outcome": {"ok": True, "duration_ms": 3},
              "exchanges": [exchange]},
    )  # fmt: skip
    text = as_role("viewer").get("/traces/dbg").content.decode()
    assert "{\n  &quot;batch&quot;: [\n    {\n      &quot;id&quot;: &quot;dbg&quot;," in text
