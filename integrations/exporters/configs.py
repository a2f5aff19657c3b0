"""Declared config fields per platform, and the one cleaner that checks a config against them.

Field names follow the interface spec (camelCase: ``apiKey``, ``projectId``, ``publicKey``,
``secretKey``, ``host``, ``url``, ``headers``); the snake_case spelling of every field
(``ml_app``, ``experiment_id``) is accepted too and stored under the canonical name.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from integrations.urlguard import url_refusal

from .base import ConfigError

HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
# Headers we set ourselves (or the HTTP layer does): a config may not override them.
RESERVED_HEADERS = frozenset(
    {"host", "content-length", "content-type", "content-encoding", "transfer-encoding", "connection", "te", "upgrade"}
)
# A header whose name contains one of these carries a credential: stored encrypted, shown masked.
SENSITIVE_HEADER_WORDS = ("auth", "key", "token", "secret", "password", "cookie", "session", "signature", "credential")
MAX_HEADERS = 50
URL_KINDS = ("url", "base_url")


def is_sensitive_header(name: str) -> bool:
    lowered = name.lower()
    return any(word in lowered for word in SENSITIVE_HEADER_WORDS)


@dataclass(frozen=True)
class Field:
    """One config field. ``kind``: str, url (used as given), base_url (API paths get appended),
    headers, choice, bool. ``address``: a field that says where requests go without being a URL
    (Datadog's ``site``); URL fields always do (`is_address`)."""

    name: str
    kind: str = "str"
    required: bool = False
    secret: bool = False
    default: Any = None
    aliases: tuple[str, ...] = ()
    choices: tuple[str, ...] = ()
    pattern: str | None = None
    pattern_hint: str = ""
    max_length: int = 500
    help: str = ""
    address: bool = False

    @property
    def is_address(self) -> bool:
        """Whether changing this field sends the integration's requests (and secrets) elsewhere."""
        return self.address or self.kind in URL_KINDS

    def spellings(self) -> list[str]:
        snake = re.sub(r"(?<!^)(?=[A-Z])", "_", self.name).lower()
        return list(dict.fromkeys([self.name, snake, *self.aliases]))


def _clean_str(f: Field, value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise ValueError("must be a string")
    text = str(value).strip()
    if not text:
        raise ValueError("must not be empty")
    if len(text) > f.max_length:
        raise ValueError(f"must be at most {f.max_length} characters")
    if any(c in text for c in "\r\n\x00"):
        raise ValueError("must not contain line breaks or NUL")
    if f.pattern and not re.fullmatch(f.pattern, text):
        raise ValueError(f.pattern_hint or f"must match {f.pattern}")
    return text


def clean_url(value: Any, *, base: bool = False) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError("must be a URL string")
    url = value.strip()
    if len(url) > 2000:
        raise ValueError("must be at most 2000 characters")
    refusal = url_refusal(url)
    if refusal:
        raise ValueError(refusal)
    # A base URL gets API paths appended: keep it without a trailing slash.
    return url.rstrip("/") if base and url.count("/") > 2 else url


def clean_headers(value: Any) -> dict[str, str]:
    if not isinstance(value, Mapping):
        raise ValueError("must be an object of header name to string value")
    if len(value) > MAX_HEADERS:
        raise ValueError(f"at most {MAX_HEADERS} headers")
    out: dict[str, str] = {}
    seen: set[str] = set()
    for name, header_value in value.items():
        if not isinstance(name, str) or not HEADER_NAME.match(name):
            raise ValueError(f"{name!r} is not a valid header name")
        if name.lower() in RESERVED_HEADERS:
            raise ValueError(f"{name} is set by tracerelay and cannot be configured")
        if name.lower() in seen:
            raise ValueError(f"{name} is given twice")
        seen.add(name.lower())
        if not isinstance(header_value, str):
            raise ValueError(f"the value of {name} must be a string")
        if any(c in header_value for c in "\r\n\x00") or len(header_value) > 8192:
            raise ValueError(f"the value of {name} must be one line of at most 8192 characters")
        out[name] = header_value
    return out


def _clean_value(f: Field, value: Any) -> Any:
    if f.kind in ("url", "base_url"):
        return clean_url(value, base=f.kind == "base_url")
    if f.kind == "headers":
        return clean_headers(value)
    if f.kind == "bool":
        if not isinstance(value, bool):
            raise ValueError("must be true or false")
        return value
    if f.kind == "choice":
        text = _clean_str(f, value).lower()
        if text not in f.choices:
            raise ValueError(f"must be one of {', '.join(f.choices)}")
        return text
    return _clean_str(f, value)


SCORE_NAME = re.compile(r"^[A-Za-z0-9_.:-]{1,200}$")
MAX_SCORE_MAPPINGS = 100


def clean_score_mappings(value: Any) -> dict[str, str | None]:
    """``{"<our score name>": "<their name>" | null}``: rename a score for this destination, or
    withhold it (null). Names not listed go out unchanged (docs/scores.md)."""
    if not isinstance(value, Mapping):
        raise ValueError('must be an object: {"<our score name>": "<their name>" or null}')
    if len(value) > MAX_SCORE_MAPPINGS:
        raise ValueError(f"at most {MAX_SCORE_MAPPINGS} mappings")
    out: dict[str, str | None] = {}
    for ours, theirs in value.items():
        if not isinstance(ours, str) or not SCORE_NAME.match(ours):
            raise ValueError(f"{str(ours)[:50]!r}: a score name is 1-200 letters, digits, '_', '.', ':' or '-'")
        if theirs is not None and (not isinstance(theirs, str) or not theirs.strip() or len(theirs) > 200):
            raise ValueError(f"{ours!r}: map to a name of 1-200 characters, or null to withhold the score")
        out[ours] = theirs.strip() if isinstance(theirs, str) else None
    return out


# Settings every platform's config carries beside its own fields (docs/destinations/README.md).
COMMON_SETTINGS: dict[str, Callable[[Any], Any]] = {"score_mappings": clean_score_mappings}


def clean_config(fields: Iterable[Field], raw: Any, *, platform: str) -> dict[str, Any]:
    """Check ``raw`` against the fields: unknown keys, types, required fields, URL guard.
    A null value means "not set". Raises `ConfigError` with every problem at once."""
    fields = tuple(fields)
    if not isinstance(raw, Mapping):
        raise ConfigError({"": ["config must be an object"]})
    by_spelling = {spelling: f for f in fields for spelling in f.spellings()}
    errors: dict[str, list[str]] = {}
    out: dict[str, Any] = {}
    given_as: dict[str, str] = {}
    for key, value in raw.items():
        if key in COMMON_SETTINGS and key not in by_spelling:
            try:
                if value is not None:
                    out[key] = COMMON_SETTINGS[key](value)
            except ValueError as exc:
                errors.setdefault(key, []).append(str(exc))
            continue
        f = by_spelling.get(key)
        if f is None:
            known = ", ".join([*(f.name for f in fields), *COMMON_SETTINGS])
            errors.setdefault(str(key), []).append(f"unknown field for {platform}; known fields: {known}")
            continue
        if f.name in given_as:
            errors.setdefault(str(key), []).append(f"given twice (also as {given_as[f.name]})")
            continue
        given_as[f.name] = key
        if value is None:
            continue
        try:
            out[f.name] = _clean_value(f, value)
        except ValueError as exc:
            errors.setdefault(f.name, []).append(str(exc))
    for f in fields:
        if f.name in out or f.name in errors:
            continue
        if f.default is not None:
            out[f.name] = f.default() if callable(f.default) else f.default
        elif f.required:
            errors[f.name] = ["This field is required."]
    if errors:
        raise ConfigError(errors)
    return out


def split_secrets(fields: Iterable[Field], config: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """A cleaned config → (public part, secret part). Credential-bearing headers go to the secret
    part under ``headers``."""
    secret_names = {f.name for f in fields if f.secret}
    public: dict[str, Any] = {}
    secret: dict[str, Any] = {}
    for key, value in config.items():
        if key in secret_names:
            secret[key] = value
        elif key == "headers" and isinstance(value, Mapping):
            public["headers"] = {k: v for k, v in value.items() if not is_sensitive_header(k)}
            hidden = {k: v for k, v in value.items() if is_sensitive_header(k)}
            if hidden:
                secret["headers"] = hidden
        else:
            public[key] = value
    return public, secret
