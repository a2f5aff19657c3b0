"""The settings every integration carries in its ``config`` beside its platform's fields
(docs/destinations/index.md, "Settings of every integration"):

    environments        ["staging"]                 which environments it receives; empty or absent: all
    environment_map     {"prod": "production"}      our environment name → the destination's
    send_user_id        true                        false: user ids are not passed on
    send_session_id     true                        false: session ids are not passed on
    transform           [{"op": …, "path": …}, …]   operations on the trace before it is encoded
    quota               {"max_per_minute": 600, "max_per_day": 100000, "over_quota": "delay"}
    response_validation {"status": [200], "json_path": "errors", "body_must_contain": "ok"}  (webhook)

`split_settings` takes them out of a submitted config, `clean_settings` checks them (errors keyed by
the setting, the message naming what is wrong), and the cleaned values are stored in ``config``
with the platform's fields. Left out means the default; defaults are not stored.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from integrations.exporters.base import ConfigError

from .transform import TransformError, operation_json, parse_transform

SETTINGS = (
    "environments",
    "environment_map",
    "send_user_id",
    "send_session_id",
    "transform",
    "quota",
    "response_validation",
)
OVER_QUOTA = ("delay", "sample", "drop")
# Which platforms read the destination's answer by a user's rules (the others by their API's own).
RESPONSE_VALIDATION_PLATFORMS = ("webhook",)
MAX_ENVIRONMENTS = 50
MAX_NAME = 100
MAX_PER_MINUTE = 100_000  # the sliding minute keeps an entry per send
MAX_PER_DAY = 1_000_000_000


def split_settings(config: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """A submitted config → (the platform's fields, these settings)."""
    own = {k: v for k, v in config.items() if k not in SETTINGS}
    settings = {k: v for k, v in config.items() if k in SETTINGS}
    return own, settings


def _name(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{what} must be non-empty strings")
    text = value.strip()
    if len(text) > MAX_NAME or any(c in text for c in "\r\n\x00"):
        raise ValueError(f"{what} must be one line of at most {MAX_NAME} characters")
    return text


def _environments(value: Any) -> list[str]:
    if not isinstance(value, list):
        raise ValueError('must be a list of environment names, such as ["staging"]; empty means all')
    if len(value) > MAX_ENVIRONMENTS:
        raise ValueError(f"at most {MAX_ENVIRONMENTS} environments")
    return list(dict.fromkeys(_name(v, "environment names") for v in value))


def _environment_map(value: Any) -> dict[str, str]:
    if not isinstance(value, Mapping):
        raise ValueError(
            'must be an object of our environment name → the destination\'s, such as {"prod": "production"}'
        )
    if len(value) > MAX_ENVIRONMENTS:
        raise ValueError(f"at most {MAX_ENVIRONMENTS} entries")
    return {_name(k, "environment names"): _name(v, "environment names") for k, v in value.items()}


def _flag(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError("must be true or false")
    return value


def _count(value: Any, field: str, top: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= top:
        raise ValueError(f"{field} must be a whole number from 1 to {top}")
    return value


def _quota(value: Any) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise ValueError('must be an object such as {"max_per_minute": 600, "over_quota": "delay"}')
    unknown = sorted(str(k) for k in value if k not in ("max_per_minute", "max_per_day", "over_quota"))
    if unknown:
        raise ValueError(f"unknown key {', '.join(unknown)}; it takes max_per_minute, max_per_day, over_quota")
    out: dict[str, Any] = {}
    if value.get("max_per_minute") is not None:
        out["max_per_minute"] = _count(value["max_per_minute"], "max_per_minute", MAX_PER_MINUTE)
    if value.get("max_per_day") is not None:
        out["max_per_day"] = _count(value["max_per_day"], "max_per_day", MAX_PER_DAY)
    if not out:
        raise ValueError("give max_per_minute, max_per_day or both")
    mode = value.get("over_quota", "delay")
    if mode not in OVER_QUOTA:
        raise ValueError(f"over_quota must be one of {', '.join(OVER_QUOTA)}")
    out["over_quota"] = mode
    return out


def _response_validation(value: Any) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise ValueError('must be an object such as {"status": [200, 202], "json_path": "errors"}')
    unknown = sorted(str(k) for k in value if k not in ("status", "json_path", "body_must_contain"))
    if unknown:
        raise ValueError(f"unknown key {', '.join(unknown)}; it takes status, json_path, body_must_contain")
    out: dict[str, Any] = {}
    status = value.get("status")
    if status is not None:
        if not isinstance(status, list) or not status or len(status) > 50:
            raise ValueError("status must be a list of 1 to 50 HTTP status codes, such as [200, 202]")
        if not all(isinstance(s, int) and not isinstance(s, bool) and 200 <= s <= 299 for s in status):
            raise ValueError("status codes must be whole numbers from 200 to 299 (other answers always fail)")
        out["status"] = sorted(set(status))
    path = value.get("json_path")
    if path is not None:
        if not isinstance(path, str) or not path.strip() or len(path) > 300 or " " in path.strip():
            raise ValueError("json_path must be a dot-separated path into the answer's JSON, such as errors")
        out["json_path"] = path.strip().removeprefix("$.")
    needle = value.get("body_must_contain")
    if needle is not None:
        if not isinstance(needle, str) or not needle or len(needle) > 1000:
            raise ValueError("body_must_contain must be text of 1 to 1000 characters")
        out["body_must_contain"] = needle
    return out


def _transform(value: Any) -> list[dict[str, Any]]:
    try:
        return [operation_json(op) for op in parse_transform(value)]
    except TransformError as exc:
        raise ValueError(str(exc)) from None


_CLEANERS = {
    "environments": _environments,
    "environment_map": _environment_map,
    "send_user_id": _flag,
    "send_session_id": _flag,
    "transform": _transform,
    "quota": _quota,
    "response_validation": _response_validation,
}


def clean_settings(raw: Mapping[str, Any], *, platform: str) -> dict[str, Any]:
    """The settings of a config, checked; `ConfigError` with every problem at once. null or an
    empty value means the default (left out)."""
    errors: dict[str, list[str]] = {}
    out: dict[str, Any] = {}
    for key, value in raw.items():
        if value is None:
            continue
        if key == "response_validation" and platform not in RESPONSE_VALIDATION_PLATFORMS:
            errors[key] = [
                f"only for {', '.join(RESPONSE_VALIDATION_PLATFORMS)}: {platform}'s answers are read by its API's rules"
            ]
            continue
        try:
            cleaned = _CLEANERS[key](value)
        except ValueError as exc:
            errors[key] = [str(exc)]
            continue
        if cleaned in ([], {}) and key != "quota":
            continue  # empty: the default
        if key in ("send_user_id", "send_session_id") and cleaned is True:
            continue
        out[key] = cleaned
    if errors:
        raise ConfigError(errors)
    return out
