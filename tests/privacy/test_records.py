"""`privacy.records`: a policy applied to `TraceRecord`s gives a copy with only the changed fields
replaced (what `dataclasses.replace` gives), and leaves a record without PII as it was."""

from __future__ import annotations

import dataclasses
from decimal import Decimal

from privacy.policy import CompiledPolicy
from privacy.records import _replaced, apply_to_record
from traces.records import TraceRecord

EMAIL = "jane.doe@example.com"
POLICY = CompiledPolicy(team_id=1, stored="redact", hash_key=b"k" * 32)


def record(**fields) -> TraceRecord:
    base = {"trace_id": "t1", "team_id": 1, "model": "gpt-4o", "tags": ("a",), "cost": Decimal("0.5")}
    return TraceRecord(**{**base, **fields})


def test_a_changed_record_equals_what_dataclasses_replace_gives():
    original = record(input=f"mail {EMAIL}", output="ok", metadata={"who": EMAIL}, error_message=f"bad {EMAIL}")
    new, kinds = apply_to_record(original, POLICY)
    expected = dataclasses.replace(
        original, input="mail [EMAIL]", metadata={"who": "[EMAIL]"}, error_message="bad [EMAIL]"
    )
    assert new == expected and kinds == {"EMAIL": 3}
    assert new is not original and original.input == f"mail {EMAIL}"  # the input record is untouched
    assert new.output is original.output and new.tags is original.tags  # unchanged fields are shared


def test_a_record_without_pii_is_returned_as_it_was():
    original = record(input="hello", metadata={"n": 1})
    assert apply_to_record(original, POLICY) == (original, {})
    assert apply_to_record(original, POLICY)[0] is original


def test_other_dataclasses_go_through_dataclasses_replace():
    @dataclasses.dataclass(frozen=True)
    class Checked:
        input: str
        seen: list[str] = dataclasses.field(default_factory=list)

        def __post_init__(self) -> None:
            self.seen.append(self.input)

    new = _replaced(Checked("a"), {"input": "b"})
    assert new.input == "b" and new.seen == ["a", "b"]  # __post_init__ ran for the copy
