"""The rule form: what the page posts ↔ the API's rule document, and the API's errors back onto
the fields they name. No rule is decided here: the document goes through the API's serializer."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from django.http import QueryDict

from ..builder import FIELDS, OPERATORS, OPERATORS_FOR, BuilderError, Row, condition_to_rows, kind_of, rows_to_condition
from ..conditions import ConditionError, compile_condition
from ..destinations import WEBHOOK_NAMES, DestinationChecker

MODES = ("every", "builder", "cel", "json")
FALLBACK_SLOTS = 2
_INDEX_RE = re.compile(r"^(cond|dest)-(\d{1,3})-")
_DEST_PATH_RE = re.compile(r"^destinations\[(\d+)\](?:\.([a-z_]+))?")


@dataclass
class CelCheck:
    """A CEL condition compiled by the one compiler: its error and where it is."""

    ok: bool
    message: str = ""
    line: int = 0
    column: int = 0
    excerpt: str = ""  # the offending line
    caret: str = ""  # spaces and a ^ under the column


def cel_check(source: str) -> CelCheck:
    if not source.strip():
        return CelCheck(ok=True)
    try:
        compile_condition(source)
    except ConditionError as exc:
        if exc.position is None:
            return CelCheck(ok=False, message=exc.message)
        offset = exc.position - 1
        line = source.count("\n", 0, offset) + 1
        start = source.rfind("\n", 0, offset) + 1
        end = source.find("\n", offset)
        column = offset - start + 1
        excerpt = source[start : end if end != -1 else len(source)]
        return CelCheck(False, exc.message, line, column, excerpt, " " * (column - 1) + "^")
    return CelCheck(ok=True)


@dataclass
class DestRow:
    index: int
    name: str = ""
    sample_rate: str = "1"
    tags: str = ""
    url: str = ""
    fallbacks: list[str] = field(default_factory=lambda: [""] * FALLBACK_SLOTS)
    errors: dict[str, list[str]] = field(default_factory=dict)

    @property
    def blank(self) -> bool:
        return not self.name.strip()

    @property
    def unfilled(self) -> bool:
        """Nothing typed or chosen (the sample rate at its default), nothing to show an error on."""
        chosen = self.name.strip() or self.url or self.tags.strip() or any(self.fallbacks)
        return not (chosen or self.errors or self.sample_rate not in ("", "1"))


@dataclass
class RuleState:
    """Everything the form shows: values as typed, and errors by field."""

    name: str = ""
    description: str = ""
    priority: str = ""
    enabled: bool = True
    stop: bool = False
    sample_rate: str = "1"
    tags: str = ""
    mode: str = "every"
    match: str = "all"
    rows: list[Row] = field(default_factory=list)
    cel: str = ""
    json_text: str = ""
    destinations: list[DestRow] = field(default_factory=list)
    errors: dict[str, list[str]] = field(default_factory=dict)
    general: list[str] = field(default_factory=list)
    cel_error: CelCheck | None = None

    def error(self, key: str, message: str) -> None:
        self.errors.setdefault(key, []).append(message)

    @property
    def has_errors(self) -> bool:
        return bool(
            self.errors
            or self.general
            or any(r.errors for r in self.rows)
            or any(d.errors for d in self.destinations)
            or (self.cel_error and not self.cel_error.ok)
        )

    def padded(self, *, spare: bool = True) -> RuleState:
        """The rows to show. A form as opened (``spare``) has one empty builder row and one empty
        destination row to type into, so it works without JavaScript (more with "Add"). A form
        shown again after a test or a refused save has the rows as filled in, the empty ones left
        out, and one empty row only where a list would be empty."""
        self.rows = [r for r in self.rows if not _unfilled_row(r)]
        self.destinations = [d for d in self.destinations if not d.unfilled]
        if spare or not self.rows:
            self.rows.append(Row())
        if spare or not self.destinations:
            start = max((d.index for d in self.destinations), default=-1) + 1
            self.destinations.append(DestRow(index=start))
        return self


def _unfilled_row(row: Row) -> bool:
    return not (row.field or row.value.strip() or row.key.strip() or row.errors)


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def state_from_rule(rule: Mapping[str, Any]) -> RuleState:
    """A stored rule (`rule_as_dict`) as the form shows it."""
    state = RuleState(
        name=rule["name"],
        description=rule.get("description") or "",
        priority=_text(rule.get("priority")),
        enabled=bool(rule.get("enabled", True)),
        stop=bool(rule.get("stop")),
        sample_rate=_text(rule.get("sample_rate", 1.0)),
        tags=", ".join(rule.get("tags") or ()),
    )
    condition = rule.get("conditions") or rule.get("condition")
    if isinstance(condition, str) and condition.strip():
        state.mode, state.cel = "cel", condition
    elif isinstance(condition, Mapping) and condition:
        rows = condition_to_rows(condition)
        if rows is None:
            state.mode, state.json_text = "json", json.dumps(condition, indent=2, ensure_ascii=False)
        else:
            state.mode, state.rows = "builder", rows
    for i, dest in enumerate(rule.get("destinations") or ()):
        fallbacks = [f["name"] for f in dest.get("fallback") or ()][:FALLBACK_SLOTS]
        state.destinations.append(
            DestRow(
                index=i,
                name=dest["name"],
                sample_rate=_text(dest.get("sample_rate", 1.0)),
                tags=", ".join(dest.get("tags") or ()),
                url=dest.get("url") or "",
                fallbacks=fallbacks + [""] * (FALLBACK_SLOTS - len(fallbacks)),
            )
        )
    return state


def _indexes(post: QueryDict, kind: str) -> list[int]:
    found = set()
    for key in post:
        match = _INDEX_RE.match(key)
        if match and match.group(1) == kind:
            found.add(int(match.group(2)))
    return sorted(found)


def state_from_post(post: QueryDict) -> RuleState:
    state = RuleState(
        name=post.get("name", ""),
        description=post.get("description", ""),
        priority=post.get("priority", "").strip(),
        enabled=post.get("enabled") == "on",
        stop=post.get("stop") == "on",
        sample_rate=post.get("sample_rate", "").strip(),
        tags=post.get("tags", ""),
        mode=post.get("mode", "every"),
        match="any" if post.get("match") == "any" else "all",
        cel=post.get("cel", "").replace("\r\n", "\n"),
        json_text=post.get("json", ""),
    )
    if state.mode not in MODES:
        state.error("mode", f"Choose one of: every trace, builder, CEL. Not '{state.mode}'.")
    for i in _indexes(post, "cond"):
        state.rows.append(
            Row(
                field=post.get(f"cond-{i}-field", "").strip(),
                op=post.get(f"cond-{i}-op", "").strip(),
                value=post.get(f"cond-{i}-value", ""),
                key=post.get(f"cond-{i}-key", ""),
            )
        )
    for i in _indexes(post, "dest"):
        state.destinations.append(
            DestRow(
                index=i,
                name=post.get(f"dest-{i}-name", "").strip(),
                sample_rate=post.get(f"dest-{i}-sample_rate", "").strip(),
                tags=post.get(f"dest-{i}-tags", ""),
                url=post.get(f"dest-{i}-url", "").strip(),
                fallbacks=[post.get(f"dest-{i}-fallback-{j}", "").strip() for j in range(FALLBACK_SLOTS)],
            )
        )
    return state


def _number(text: str, kind: type = float) -> Any:
    """The typed number, or the text itself for the API's validation to refuse with its message."""
    try:
        return kind(text)
    except ValueError:
        return text


def _tags(text: str) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()]


class FormInvalid(ValueError):
    """The form cannot be made into a document (a builder row, JSON): the errors are on the state."""


def to_document(state: RuleState, previous: Mapping[str, Any] | None) -> tuple[dict[str, Any], list[int]]:
    """The API's rule document for this form, and which form row each of its destinations came from.

    A fallback named again keeps what the stored one had (its tags, url, own fallbacks), so a
    rule written through the API loses nothing when the page saves it."""
    doc: dict[str, Any] = {
        "name": state.name,
        "description": state.description,
        "enabled": state.enabled,
        "stop": state.stop,
        "tags": _tags(state.tags),
    }
    if state.priority:
        doc["priority"] = _number(state.priority, int)
    if state.sample_rate:
        doc["sample_rate"] = _number(state.sample_rate)
    if state.mode == "builder":
        try:
            doc["conditions"] = rows_to_condition(state.rows, state.match)
        except BuilderError:
            raise FormInvalid from None
    elif state.mode == "cel":
        doc["condition"] = state.cel
    elif state.mode == "json":
        try:
            doc["conditions"] = json.loads(state.json_text) if state.json_text.strip() else None
        except ValueError as exc:
            state.error("json", f"Not valid JSON: {exc}.")
            raise FormInvalid from None
    if state.errors:
        raise FormInvalid
    stored_fallbacks: dict[str, Any] = {}
    for dest in (previous or {}).get("destinations") or ():
        for fallback in dest.get("fallback") or ():
            stored_fallbacks.setdefault(fallback["name"], fallback)
    destinations: list[dict[str, Any]] = []
    rows: list[int] = []
    for i, dest in enumerate(state.destinations):
        if dest.blank:
            continue
        item: dict[str, Any] = {"name": dest.name, "tags": _tags(dest.tags)}
        if dest.sample_rate:
            item["sample_rate"] = _number(dest.sample_rate)
        if dest.url:
            item["url"] = dest.url
        item["fallback"] = [
            dict(stored_fallbacks.get(name) or {"name": name}) for name in dict.fromkeys(f for f in dest.fallbacks if f)
        ]
        destinations.append(item)
        rows.append(i)
    doc["destinations"] = destinations
    return doc, rows


def apply_errors(state: RuleState, errors: Mapping[str, list[str]], rows: list[int]) -> None:
    """The API's errors for this rule (paths inside it) → next to the form's fields."""
    for path, messages in errors.items():
        if path in ("name", "description", "priority", "sample_rate", "enabled", "stop"):
            state.errors.setdefault(path, []).extend(messages)
        elif path == "tags" or path.startswith("tags["):
            state.errors.setdefault("tags", []).extend(messages)
        elif path.split(".")[0] in ("condition", "conditions"):
            _condition_errors(state, path.partition(".")[2], messages)
        elif path in ("destinations", "destination"):
            state.errors.setdefault("destinations", []).extend(messages)
        elif match := _DEST_PATH_RE.match(path):
            index, part = int(match.group(1)), match.group(2) or "name"
            if index >= len(rows):
                state.errors.setdefault("destinations", []).extend(messages)
                continue
            dest = state.destinations[rows[index]]
            key = part if part in ("sample_rate", "tags", "url", "fallback") else "name"
            dest.errors.setdefault(key, []).extend(messages)
        else:
            state.general.extend(f"{path}: {m}" if path else m for m in messages)


def _condition_errors(state: RuleState, key: str, messages: list[str]) -> None:
    if state.mode == "cel":
        state.cel_error = cel_check(state.cel)
        if state.cel_error.ok:  # not a compile error (both forms given …): say it as the API did
            state.errors.setdefault("cel", []).extend(messages)
        return
    if state.mode == "builder" and state.match == "all" and key:
        for row in state.rows:
            if not row.blank and (row.object_key == key or (key == "metadata" and row.field == "metadata")):
                row.errors.extend(messages)
                return
    state.errors.setdefault(state.mode if state.mode in ("json",) else "condition", []).extend(messages)


# ---------------------------------------------------------------------------------------------
# Choices for the template


def field_choices() -> list[dict[str, Any]]:
    return [
        {"name": name, "kind": kind_of(name), "label": "metadata key" if name == "metadata" else name}
        for name in FIELDS
    ]


def operator_choices() -> list[dict[str, Any]]:
    return [
        {"op": op, "label": label, "kinds": " ".join(k for k, ops in OPERATORS_FOR.items() if op in ops)}
        for op, label in OPERATORS.items()
    ]


def destination_choices(checker: DestinationChecker, current: list[str]) -> dict[str, list[dict[str, Any]]]:
    """The names a destination may use: this team's integrations, its platforms (meaning the first
    integration of the kind), an ad-hoc webhook; plus any stored name no longer known (shown so
    its error can be read and fixed). ``webhook``: the destination may take a URL (an ad-hoc webhook:
    only the webhook platform's own spelling; a webhook integration sends to its own URL alone)."""
    integrations = [
        {"value": name, "label": f"{name} ({platform})", "webhook": name in WEBHOOK_NAMES}
        for name, platform in sorted(checker.platform_of.items())
    ]
    platforms = [
        {"value": p, "label": f"any {p} integration", "webhook": p == "webhook"}
        for p in sorted(checker.platforms)
        if p not in checker.platform_of and p != "webhook"
    ]
    if "webhook" not in checker.platform_of:
        label = "any webhook integration, or a URL" if "webhook" in checker.platforms else "webhook to a URL"
        platforms.append({"value": "webhook", "label": label, "webhook": True})
    known = {c["value"] for c in integrations + platforms}
    gone = [
        {"value": n, "label": f"{n} (not an integration of this team)", "webhook": False}
        for n in dict.fromkeys(current)
        if n and n not in known
    ]
    return {"integrations": integrations, "platforms": platforms, "unknown": gone}
