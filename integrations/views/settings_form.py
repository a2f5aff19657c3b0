"""The form sections of the settings every integration carries in its config
(`integrations.options.schema`): environments and identity, payload transformation, quota, and the
webhook's response validation. Like the rest of the form, they only turn what was typed into the
API's document; the services check it and their messages come back next to these fields."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from django import forms

from ..options.schema import OVER_QUOTA, RESPONSE_VALIDATION_PLATFORMS

SETTING = "setting_"
# A service's error key (``config.<setting>``) → the form field its message goes under.
ERROR_FIELDS = {
    "environments": SETTING + "environments",
    "environment_map": SETTING + "environment_map",
    "send_user_id": SETTING + "withhold_user_id",
    "send_session_id": SETTING + "withhold_session_id",
    "transform": SETTING + "transform",
    "quota": SETTING + "quota_max_per_minute",
    "response_validation": SETTING + "rv_status",
}


def _text(label: str, help_text: str, **attrs: Any) -> forms.CharField:
    widget = forms.Textarea(attrs={"spellcheck": "false", **attrs}) if "rows" in attrs else forms.TextInput(attrs=attrs)
    return forms.CharField(label=label, required=False, help_text=help_text, widget=widget)


def settings_fields(platform: str) -> dict[str, forms.Field]:
    fields: dict[str, forms.Field] = {
        "environments": _text(
            "Environments",
            "Comma-separated: only traces of these environments are sent here. Empty: all. A trace of another "
            "environment is recorded as dropped (reason environment).",
            placeholder="staging, production",
        ),
        "environment_map": _text(
            "Environment mapping",
            "One per line: our environment = the destination's name for it. Names not listed pass unchanged.",
            rows=2,
            placeholder="prod = production",
        ),
        # Ticked means "do not send" (config send_user_id false): a form posted without the box keeps
        # the default, sending them.
        "withhold_user_id": forms.BooleanField(
            label="Withhold user ids", required=False, help_text="Traces go here without their user id."
        ),
        "withhold_session_id": forms.BooleanField(
            label="Withhold session ids", required=False, help_text="Traces go here without their session id."
        ),
        "transform": _text(
            "Operations",
            'A JSON list, applied in order after the PII policy: {"op": "drop", "path": "input"}, '
            '{"op": "truncate", "path": "output", "max_chars": 2000}, {"op": "rename", "path": "metadata.customer", '
            '"to": "metadata.account"}, {"op": "set", "path": "metadata.source", "value": "tracerelay"}, '
            '{"op": "hash", "path": "user_id"}. Paths start at input, output, metadata, user_id, session_id, '
            "environment, tags…; * stands for every key.",
            rows=5,
            placeholder='[{"op": "drop", "path": "input"}]',
        ),
        "quota_max_per_minute": _text(
            "Per minute", "At most this many traces in any 60 seconds (1 to 100,000).", type="number", min="1"
        ),
        "quota_max_per_day": _text("Per day", "At most this many traces per UTC day.", type="number", min="1"),
        "quota_over_quota": forms.ChoiceField(
            label="Over the quota",
            required=False,
            initial="delay",
            choices=[
                ("delay", "delay"),
                ("sample", "sample"),
                ("drop", "drop"),
            ],
            help_text="For traces the quota has no room for. delay: held until there is room (nothing lost); "
            "sample: a consistent fraction kept; drop: recorded as dropped (replayable).",
        ),
    }
    assert {c for c, _ in fields["quota_over_quota"].choices} == set(OVER_QUOTA)  # type: ignore[attr-defined]
    if platform in RESPONSE_VALIDATION_PLATFORMS:
        fields["rv_status"] = _text(
            "Success statuses",
            "Comma-separated 2xx codes that count as accepted (empty: any 2xx).",
            placeholder="200, 202",
        )
        fields["rv_json_path"] = _text(
            "Error path",
            "A dot-separated path in the answer's JSON that must be absent or empty, such as errors: "
            'a 200 whose body says {"errors": [...]} is then a failure.',
            placeholder="errors",
        )
        fields["rv_body_must_contain"] = _text(
            "Body must contain", "Text the answer must contain to count as accepted.", placeholder='"ok":true'
        )
    return {SETTING + name: field for name, field in fields.items()}


def settings_initial(config: Mapping[str, Any]) -> dict[str, Any]:
    quota = config.get("quota") or {}
    checks = config.get("response_validation") or {}
    initial = {
        "environments": ", ".join(config.get("environments") or []),
        "environment_map": "\n".join(f"{k} = {v}" for k, v in (config.get("environment_map") or {}).items()),
        "withhold_user_id": config.get("send_user_id") is False,
        "withhold_session_id": config.get("send_session_id") is False,
        "transform": json.dumps(config["transform"], indent=1) if config.get("transform") else "",
        "quota_max_per_minute": quota.get("max_per_minute", ""),
        "quota_max_per_day": quota.get("max_per_day", ""),
        "quota_over_quota": quota.get("over_quota", "delay"),
        "rv_status": ", ".join(str(s) for s in checks.get("status") or []),
        "rv_json_path": checks.get("json_path", ""),
        "rv_body_must_contain": checks.get("body_must_contain", ""),
    }
    return {SETTING + k: v for k, v in initial.items()}


def _number(text: str) -> Any:
    text = text.strip()
    return int(text) if text.isdigit() else text  # anything else goes on to be refused with the API's words


def settings_document(form: forms.Form, *, patch: bool) -> dict[str, Any]:
    """What was typed → the settings part of the API's ``config``; emptied settings are null in a
    PATCH (removed), left out on create. A line that is not a pair, or text that is not JSON, is a
    form error on its field."""
    data = form.cleaned_data
    get = lambda name: data.get(SETTING + name)  # noqa: E731
    out: dict[str, Any] = {}
    environments = [e.strip() for e in (get("environments") or "").split(",") if e.strip()]
    out["environments"] = environments or None
    pairs: dict[str, str] = {}
    for number, line in enumerate((get("environment_map") or "").splitlines(), 1):
        if not line.strip():
            continue
        ours, sep, theirs = line.partition("=")
        if not sep or not ours.strip() or not theirs.strip():
            form.add_error(SETTING + "environment_map", f"Line {number}: write it as ours = theirs.")
            break
        pairs[ours.strip()] = theirs.strip()
    out["environment_map"] = pairs or None
    out["send_user_id"] = not get("withhold_user_id")
    out["send_session_id"] = not get("withhold_session_id")
    text = (get("transform") or "").strip()
    out["transform"] = None
    if text:
        try:
            out["transform"] = json.loads(text)
        except ValueError as exc:
            form.add_error(SETTING + "transform", f"Not JSON: {exc}.")
    quota = {
        "max_per_minute": _number(get("quota_max_per_minute") or ""),
        "max_per_day": _number(get("quota_max_per_day") or ""),
    }
    quota = {k: v for k, v in quota.items() if v != ""}
    out["quota"] = {**quota, "over_quota": get("quota_over_quota") or "delay"} if quota else None
    if SETTING + "rv_status" in form.fields:
        checks: dict[str, Any] = {}
        codes = [c.strip() for c in (get("rv_status") or "").split(",") if c.strip()]
        if codes:
            checks["status"] = [_number(c) for c in codes]
        path = (get("rv_json_path") or "").strip()
        if path:
            checks["json_path"] = path
        if get("rv_body_must_contain"):
            checks["body_must_contain"] = get("rv_body_must_contain")
        out["response_validation"] = checks or None
    if not patch:
        out = {k: v for k, v in out.items() if v is not None and v is not True}
    return out
