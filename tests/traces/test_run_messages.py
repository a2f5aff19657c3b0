"""A span's input and output read as a conversation (`traces.views.messages`): OpenAI chat messages
and responses with tool calls, OpenAI Responses items, Anthropic content blocks with tool use and
results; anything else is no conversation (the page shows JSON)."""

from __future__ import annotations

from traces.views.messages import conversation


def _roles(messages):
    return [(m.role, m.text, [c.name for c in m.tool_calls], m.tool_name, m.side) for m in messages]


def test_openai_chat_with_a_tool_round_trip():
    messages = conversation(
        [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": [{"type": "text", "text": "Weather?"}, {"type": "image_url", "image_url": {}}]},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "weather", "arguments": '{"city":"Oslo"}'}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "3 °C"},
        ],
        {"choices": [{"message": {"role": "assistant", "content": "It is 3 °C."}}]},
    )  # fmt: skip
    assert _roles(messages) == [
        ("system", "Be brief.", [], "", "input"),
        ("user", "Weather?\n[image]", [], "", "input"),
        ("assistant", "", ["weather"], "", "input"),
        ("tool", "3 °C", [], "weather", "input"),
        ("assistant", "It is 3 °C.", [], "", "output"),
    ]
    assert messages[2].tool_calls[0].arguments == '{\n  "city": "Oslo"\n}'


FOUND = [{"type": "text", "text": "found"}]


def test_anthropic_blocks_and_a_system_prompt():
    messages = conversation(
        {"system": "Be kind.", "messages": [
            {"role": "user", "content": "Find it"},
            {"role": "assistant", "content": [{"type": "text", "text": "Looking."},
                                              {"type": "tool_use", "id": "t1", "name": "search", "input": {"q": "x"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": FOUND}]},
        ]},
        {"role": "assistant", "content": [{"type": "text", "text": "Here it is."}]},
    )  # fmt: skip
    assert _roles(messages) == [
        ("system", "Be kind.", [], "", "input"),
        ("user", "Find it", [], "", "input"),
        ("assistant", "Looking.", ["search"], "", "input"),
        ("tool", "found", [], "search", "input"),
        ("assistant", "Here it is.", [], "", "output"),
    ]


def test_openai_responses_items():
    messages = conversation(
        {"input": [{"role": "user", "content": "Add 2 and 3"}]},
        {"output": [
            {"type": "function_call", "call_id": "f1", "name": "add", "arguments": '{"a":2,"b":3}'},
            {"type": "function_call_output", "call_id": "f1", "output": "5"},
            {"type": "message", "content": [{"type": "output_text", "text": "5"}]},
        ]},
    )  # fmt: skip
    assert _roles(messages) == [
        ("user", "Add 2 and 3", [], "", "input"),
        ("assistant", "", ["add"], "", "output"),
        ("tool", "5", [], "add", "output"),
        ("assistant", "5", [], "", "output"),
    ]


def test_a_string_is_a_turn_and_anything_else_is_no_conversation():
    assert _roles(conversation("Rank these", "h2")) == [
        ("user", "Rank these", [], "", "input"),
        ("assistant", "h2", [], "", "output"),
    ]
    assert conversation({"q": "Paris"}, {"temp": 21}) is None  # a tool's arguments and result: JSON
    assert conversation([1, 2], None) is None
    assert conversation(None, None) is None
    assert conversation([{"role": "narrator", "content": "x"}], None) is None  # no known role
