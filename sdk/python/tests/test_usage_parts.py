"""Usage parts read from provider usage objects, as the proxy reads them (issue 26)."""

from __future__ import annotations

from types import SimpleNamespace

from tracerelay.instrument._common import usage_fields


def test_openai_cached_reasoning_and_audio_tokens_are_read():
    usage = SimpleNamespace(
        prompt_tokens=1000,
        completion_tokens=300,
        prompt_tokens_details=SimpleNamespace(cached_tokens=800, audio_tokens=50),
        completion_tokens_details=SimpleNamespace(reasoning_tokens=200, audio_tokens=None),
    )
    assert usage_fields(usage) == {
        "prompt_tokens": 1000,
        "completion_tokens": 300,
        "cached_tokens": 800,
        "input_audio_tokens": 50,
        "reasoning_tokens": 200,
    }


def test_the_responses_api_details_are_read():
    usage = {"input_tokens": 12, "input_tokens_details": {"cached_tokens": 4}, "output_tokens": 7,
             "output_tokens_details": {"reasoning_tokens": 3}}  # fmt: skip
    assert usage_fields(usage) == {
        "prompt_tokens": 12,
        "completion_tokens": 7,
        "cached_tokens": 4,
        "reasoning_tokens": 3,
    }


def test_anthropic_cache_tokens_are_added_to_the_prompt_and_kept_as_parts():
    usage = {"input_tokens": 21, "cache_read_input_tokens": 4, "cache_creation_input_tokens": 7, "output_tokens": 9}
    assert usage_fields(usage) == {
        "prompt_tokens": 32,
        "completion_tokens": 9,
        "cached_tokens": 4,
        "cache_write_tokens": 7,
    }


def test_plain_usage_has_no_parts_and_garbage_none():
    assert usage_fields({"prompt_tokens": 5, "completion_tokens": 1}) == {"prompt_tokens": 5, "completion_tokens": 1}
    assert usage_fields({"prompt_tokens": "many"}) == {}
