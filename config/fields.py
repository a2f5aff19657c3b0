"""DRF fields that refuse coercion: JSON's types are the contract, so `0` is not `false` and `5`
is not `"5"` (DRF's own fields convert both). Used by every API that takes a JSON body."""

from __future__ import annotations

import re
from typing import Any

from rest_framework import serializers

# Names shown in email subjects, file names and page titles: no control characters (a line break in
# a subject is a header injection Django refuses, so every email of such a report or alert failed).
NAME_PATTERN = r"^[^\x00-\x1f\x7f]*$"
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def has_control_characters(text: str) -> bool:
    return _CONTROL.search(text) is not None


class StrictBooleanField(serializers.BooleanField):
    def to_internal_value(self, data: Any) -> bool:
        if not isinstance(data, bool):
            self.fail("invalid", input=data)
        return data


class StrictCharField(serializers.CharField):
    default_error_messages = {"not_a_string": "Must be a string."}

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("not_a_string")
        return super().to_internal_value(data)


class StrictIntegerField(serializers.IntegerField):
    def to_internal_value(self, data: Any) -> int:
        if isinstance(data, bool) or not isinstance(data, int):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictFloatField(serializers.FloatField):
    def to_internal_value(self, data: Any) -> float:
        if isinstance(data, bool) or not isinstance(data, int | float):
            self.fail("invalid")
        return super().to_internal_value(data)
