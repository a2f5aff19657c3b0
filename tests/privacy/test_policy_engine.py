"""The pure policy engine: every mode on input, output, metadata and error messages."""

from __future__ import annotations

import copy

import pytest

from privacy.detection import compile_patterns
from privacy.policy import CompiledPolicy, apply_policy, pseudonym, transform_text
from privacy.selectors import team_hash_key

EMAIL = "jane.doe@example.com"
CARD = "4111 1111 1111 1111"
KEY = "sk-proj-Ab12Cd34Ef56Gh78Ij90Kl12Mn34"


def trace() -> dict:
    return {
        "model": "gpt-4o",
        "input": [
            {"role": "system", "content": "You are helpful."},
            {"role": "user", "content": f"My email is {EMAIL} and my card {CARD}."},
        ],
        "output": {"role": "assistant", "content": f"Thanks, I noted {EMAIL}."},
        "metadata": {
            "user": {"email": EMAIL, "plan": "pro"},
            "tags": ["vip", f"key={KEY}"],
            "count": 3,
            "ok": True,
        },
        "error": {"type": "RateLimit", "message": f"quota exceeded for {EMAIL}"},
    }


def policy(mode: str, **kwargs) -> CompiledPolicy:
    return CompiledPolicy(team_id=1, stored=mode, hash_key=b"k" * 32, **kwargs)


def test_off_returns_the_trace_unscanned():
    result = apply_policy(trace(), policy("off"))
    assert result.trace == trace()
    assert result.kinds == {}
    assert result.mode == "off"


def test_detect_counts_kinds_and_keeps_the_text():
    original = trace()
    result = apply_policy(original, policy("detect"))
    assert result.trace == trace()
    assert result.kinds == {"EMAIL": 4, "CREDIT_CARD": 1, "SECRET": 1}
    assert result.found


def test_redact_puts_typed_placeholders_everywhere():
    result = apply_policy(trace(), policy("redact"))
    out = result.trace
    assert out["input"][1]["content"] == "My email is [EMAIL] and my card [CREDIT_CARD]."
    assert out["input"][0] == {"role": "system", "content": "You are helpful."}
    assert out["output"]["content"] == "Thanks, I noted [EMAIL]."
    assert out["metadata"] == {
        "user": {"email": "[EMAIL]", "plan": "pro"},
        "tags": ["vip", "key=[SECRET]"],
        "count": 3,
        "ok": True,
    }
    assert out["error"] == {"type": "RateLimit", "message": "quota exceeded for [EMAIL]"}
    assert out["model"] == "gpt-4o"
    assert result.kinds == {"EMAIL": 4, "CREDIT_CARD": 1, "SECRET": 1}
    assert EMAIL not in repr(out) and CARD not in repr(out) and KEY not in repr(out)


def test_it_never_changes_the_trace_it_was_given():
    original = trace()
    snapshot = copy.deepcopy(original)
    for mode in ("detect", "redact", "hash", "drop"):
        apply_policy(original, policy(mode))
    assert original == snapshot


def test_hash_gives_the_same_pseudonym_for_the_same_value():
    out = apply_policy(trace(), policy("hash")).trace
    tag = out["metadata"]["user"]["email"]
    assert tag.startswith("[EMAIL:") and len(tag) == len("[EMAIL:]") + 12
    assert out["output"]["content"] == f"Thanks, I noted {tag}."
    assert out["error"]["message"] == f"quota exceeded for {tag}"
    assert EMAIL not in repr(out)


def test_hash_ignores_case_of_emails_and_formatting_of_numbers():
    key = b"x" * 32
    assert pseudonym(key, "EMAIL", "Jane@Example.com") == pseudonym(key, "EMAIL", "jane@example.com")
    assert pseudonym(key, "PHONE", "+1 415-555-0132") == pseudonym(key, "PHONE", "+14155550132")
    assert pseudonym(key, "EMAIL", "a@example.com") != pseudonym(key, "EMAIL", "b@example.com")


def test_hash_pseudonyms_differ_between_teams():
    one = team_hash_key(1, "salt")
    two = team_hash_key(2, "salt")
    assert one != two
    assert pseudonym(one, "EMAIL", EMAIL) != pseudonym(two, "EMAIL", EMAIL)
    assert team_hash_key(1, "salt") == one  # stable for the same team and salt
    assert team_hash_key(1, "other salt") != one


def test_drop_nulls_input_and_output_and_removes_metadata_entries():
    result = apply_policy(trace(), policy("drop"))
    out = result.trace
    assert out["input"] is None
    assert out["output"] is None
    assert out["metadata"] == {"user": {"plan": "pro"}, "tags": ["vip"], "count": 3, "ok": True}
    assert out["error"] == {"type": "RateLimit", "message": ""}
    assert set(result.dropped) == {"input", "output", "metadata.user.email", "metadata.tags[1]", "error.message"}
    assert result.kinds == {"EMAIL": 4, "CREDIT_CARD": 1, "SECRET": 1}


def test_drop_keeps_fields_without_pii():
    clean = {"model": "m", "input": "hello", "output": "hi", "metadata": {"a": "b"}, "error": None}
    result = apply_policy(clean, policy("drop"))
    assert result.trace == clean
    assert result.dropped == ()


def test_a_string_error_is_scanned_too():
    t = {"model": "m", "error": f"failed for {EMAIL}"}
    assert apply_policy(t, policy("redact")).trace["error"] == "failed for [EMAIL]"
    assert apply_policy(t, policy("drop")).trace["error"] == ""


def test_string_input_and_output_are_handled():
    t = {"model": "m", "input": f"mail {EMAIL}", "output": f"card {CARD}"}
    out = apply_policy(t, policy("redact")).trace
    assert out == {"model": "m", "input": "mail [EMAIL]", "output": "card [CREDIT_CARD]"}


def test_the_kinds_filter_limits_what_is_touched():
    result = apply_policy(trace(), policy("redact", kinds=frozenset({"CREDIT_CARD"})))
    assert result.kinds == {"CREDIT_CARD": 1}
    assert result.trace["input"][1]["content"] == f"My email is {EMAIL} and my card [CREDIT_CARD]."


def test_custom_patterns_apply_with_their_name():
    custom = compile_patterns([{"name": "EMPLOYEE_ID", "regex": r"EMP-\d{6}"}])
    t = {"model": "m", "input": "ticket for EMP-004211 please", "metadata": {"who": "EMP-123456"}}
    result = apply_policy(t, policy("redact", custom=custom, kinds=frozenset()))
    assert result.trace["input"] == "ticket for [EMPLOYEE_ID] please"
    assert result.trace["metadata"] == {"who": "[EMPLOYEE_ID]"}
    assert result.kinds == {"EMPLOYEE_ID": 2}


def test_destinations_get_their_own_mode_or_the_stored_trace():
    p = policy("detect", destinations={"langfuse": "redact", "selfhosted": "off", "datadog": "hash"})
    assert apply_policy(trace(), p, destination="langfuse").trace["metadata"]["user"]["email"] == "[EMAIL]"
    assert apply_policy(trace(), p, destination="datadog").trace["metadata"]["user"]["email"].startswith("[EMAIL:")
    assert apply_policy(trace(), p, destination="selfhosted").trace == trace()
    unlisted = apply_policy(trace(), p, destination="phoenix")
    assert unlisted.mode == "inherit"
    assert unlisted.trace == trace()
    assert unlisted.kinds == {}


def test_keys_and_non_strings_are_left_alone():
    t = {"model": "m", "metadata": {EMAIL: 4111111111111111, "n": 5.5, "none": None}}
    assert apply_policy(t, policy("redact")).trace == t


def test_json_deeper_than_the_walk_is_scanned_as_text():
    deep: dict = {"v": f"x {EMAIL}"}
    for _ in range(100):
        deep = {"d": deep}
    result = apply_policy({"model": "m", "metadata": deep}, policy("redact"))
    assert result.kinds == {"EMAIL": 1}
    assert EMAIL not in repr(result.trace)
    clean: dict = {"v": "nothing"}
    for _ in range(100):
        clean = {"d": clean}
    assert apply_policy({"model": "m", "metadata": clean}, policy("redact")).trace["metadata"] is clean


def test_transform_text_replaces_in_order():
    from privacy.detection import scan

    text = f"{EMAIL} / {CARD}"
    assert transform_text(text, scan(text), "redact") == "[EMAIL] / [CREDIT_CARD]"
    assert transform_text(text, scan(text), "detect") == text


@pytest.mark.parametrize("mode", ["redact", "hash", "drop", "detect"])
def test_unchanged_fields_are_shared_not_copied(mode):
    t = {"model": "m", "input": "nothing here", "metadata": {"a": ["b", {"c": "d"}]}}
    out = apply_policy(t, policy(mode)).trace
    assert out["metadata"] is t["metadata"]


def test_values_of_every_json_shape_and_their_subclasses_are_walked():
    class Tag(str):
        pass

    class Attributes(dict):
        pass

    t = {
        "model": "m",
        "input": ("tuple", [Tag(f"to {EMAIL}"), 3, None, 1.5, True]),
        "metadata": Attributes(user=Attributes(email=EMAIL), n=7),
    }
    result = apply_policy(t, policy("redact"))
    assert result.trace["input"] == ["tuple", ["to [EMAIL]", 3, None, 1.5, True]]
    assert result.trace["metadata"] == {"user": {"email": "[EMAIL]"}, "n": 7}
    assert result.kinds == {"EMAIL": 2}
    dropped = apply_policy({"model": "m", "metadata": {"a": [{"b": [0, Tag(EMAIL)]}]}}, policy("drop"))
    assert dropped.dropped == ("metadata.a[0].b[1]",)
    assert dropped.trace["metadata"] == {"a": [{"b": [0]}]}


def test_custom_patterns_see_short_strings_and_strings_the_prefilter_turns_away():
    custom = compile_patterns([{"name": "TICKET", "regex": r"\bTK\b|\bticket\b"}])
    t = {"model": "m", "metadata": {"short": "TK", "prose": "see the ticket"}}
    result = apply_policy(t, policy("redact", custom=custom))
    assert result.trace["metadata"] == {"short": "[TICKET]", "prose": "see the [TICKET]"}
