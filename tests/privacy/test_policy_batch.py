"""A policy applied to a batch scans each distinct string once (`policy._Walk`'s per-batch results)
and gives, trace by trace, exactly what `apply_policy` gives one trace at a time: the same text,
the same kinds counted per trace, the same paths dropped."""

from __future__ import annotations

import copy
from decimal import Decimal

import pytest

from privacy.detection import compile_patterns
from privacy.policy import CompiledPolicy, apply_policy, apply_policy_batch
from privacy.records import apply_to_record, apply_to_records
from traces.records import TraceRecord

EMAIL = "jane.doe@example.com"
SYSTEM = "You are a support agent. Escalate to support-team@example.com when unsure."
CUSTOM = compile_patterns([{"name": "TICKET", "regex": r"TK-[0-9]{4}"}])


def traces() -> list[dict]:
    """Strings repeated across the batch (a system prompt with PII, a clean answer, a model name in
    metadata, one e-mail in several places) and strings each trace has alone."""
    out = []
    for i in range(12):
        out.append(
            {
                "model": "gpt-4o-mini",
                "input": [
                    {"role": "system", "content": SYSTEM},
                    {
                        "role": "user",
                        "content": f"Order {i}: mail {EMAIL}, ticket TK-{1000 + i}, call +49 30 1234{i:04d}.",
                    },
                ],
                "output": "Done, I wrote back." if i % 2 else {"role": "assistant", "content": f"Wrote to {EMAIL}."},
                "metadata": {"span": "chat gpt-4o-mini", "user": {"email": EMAIL}, "tags": ["vip", EMAIL, "eu"]},
                "error": {"type": "Timeout", "message": f"no answer from {EMAIL}"} if i % 3 == 0 else None,
            }
        )
    return out


def policy(mode: str, **kwargs) -> CompiledPolicy:
    return CompiledPolicy(team_id=1, stored=mode, hash_key=b"k" * 32, **kwargs)


@pytest.mark.parametrize("mode", ["detect", "redact", "hash", "drop"])
@pytest.mark.parametrize("options", [{}, {"custom": CUSTOM}, {"kinds": frozenset({"PHONE"})}])
def test_a_batch_gives_each_trace_what_one_at_a_time_gives(mode, options):
    batch = traces()
    before = copy.deepcopy(batch)
    one_by_one = [apply_policy(trace, policy(mode, **options)) for trace in batch]
    together = apply_policy_batch(batch, policy(mode, **options))
    assert together == one_by_one
    assert batch == before  # the input is never modified


def test_kinds_are_counted_per_trace_even_for_a_string_scanned_once():
    results = apply_policy_batch(traces(), policy("redact"))
    # Trace 0: the system prompt, the user's message (e-mail + phone), the output, metadata's two
    # e-mails and the error message; trace 1: no error and a clean output.
    assert results[0].kinds == {"EMAIL": 6, "PHONE": 1}
    assert results[1].kinds == {"EMAIL": 4, "PHONE": 1}
    assert all(
        r.trace["input"][0]["content"] == "You are a support agent. Escalate to [EMAIL] when unsure." for r in results
    )
    assert results[1].trace["output"] == "Done, I wrote back."


def test_drop_names_every_trace_s_paths_for_a_string_scanned_once():
    results = apply_policy_batch(traces(), policy("drop"))
    assert results[0].dropped == ("input", "output", "metadata.user.email", "metadata.tags[1]", "error.message")
    assert results[1].dropped == ("input", "metadata.user.email", "metadata.tags[1]")
    assert results[1].trace["metadata"] == {"span": "chat gpt-4o-mini", "user": {}, "tags": ["vip", "eu"]}


def test_a_clean_repeated_value_is_returned_as_it_was():
    batch = [{"model": "m", "metadata": {"span": "chat gpt-4o-mini", "n": 1}} for _ in range(3)]
    for trace, result in zip(batch, apply_policy_batch(batch, policy("redact")), strict=True):
        assert result.trace["metadata"] is trace["metadata"] and result.kinds == {}


def test_a_str_subclass_with_its_own_equality_is_scanned_for_itself():
    class Loose(str):
        """Equal to any string: a shared result keyed by equality would be wrong for it."""

        def __eq__(self, other: object) -> bool:
            return True

        __hash__ = str.__hash__

    batch = [
        {"model": "m", "metadata": {"a": "nothing to see"}},
        {"model": "m", "metadata": {"a": Loose(f"to {EMAIL}")}},
    ]
    results = apply_policy_batch(batch, policy("redact"))
    assert results[1].trace["metadata"] == {"a": "to [EMAIL]"} and results[1].kinds == {"EMAIL": 1}


def test_off_and_a_destination_without_an_entry_leave_the_batch_unscanned():
    p = CompiledPolicy(team_id=1, stored="off", destinations={"saas": "redact"}, hash_key=b"k" * 32)
    assert [r.mode for r in apply_policy_batch(traces(), p)] == ["off"] * 12
    assert [r.mode for r in apply_policy_batch(traces(), p, destination="self-hosted")] == ["inherit"] * 12
    redacted = apply_policy_batch(traces(), p, destination="saas")
    assert all(r.mode == "redact" and EMAIL not in str(r.trace) for r in redacted)


def record(i: int) -> TraceRecord:
    return TraceRecord(
        trace_id=f"t{i}",
        team_id=1,
        model="gpt-4o",
        cost=Decimal("0.1"),
        input=[{"role": "system", "content": SYSTEM}, {"role": "user", "content": f"hi {i}"}],
        output="Done, I wrote back.",
        metadata={"span": "chat gpt-4o-mini", "who": EMAIL if i % 2 else "nobody"},
        error_type="Timeout" if i % 3 == 0 else "",
        error_message=f"no answer from {EMAIL}" if i % 3 == 0 else "",
    )


@pytest.mark.parametrize("mode", ["detect", "redact", "hash", "drop"])
def test_records_of_a_batch_equal_records_one_at_a_time(mode):
    records = [record(i) for i in range(9)]
    assert apply_to_records(records, policy(mode)) == [apply_to_record(r, policy(mode)) for r in records]
    dropped = apply_to_records(records, policy("drop"))
    assert dropped[0][0].error_message == "" and dropped[0][0].error_type == "Timeout"
    assert dropped[1][0].metadata == {"span": "chat gpt-4o-mini"} and dropped[1][1] == {"EMAIL": 2}
