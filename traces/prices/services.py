"""Writes of a team's prices, for the API and the `/settings/prices` page alike.

`clean_price` checks a price as the API takes it (JSON: numbers as JSON numbers or decimal strings)
and the page posts it (strings): every field's problem at once, under the field's name. After a
change commits, every process forgets the team's compiled prices (config/invalidation.py), so the
next trace is priced by the new list.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, datetime
from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from accounts.services import audit
from config.problems import InvalidInput

from .lookup import compiled_cache
from .models import PRICE_DIGITS, PRICE_PLACES, TeamPrice

REQUIRED = ("model", "input_per_mtok", "output_per_mtok")
PRICE_FIELDS = (
    "input_per_mtok",
    "output_per_mtok",
    "cached_input_per_mtok",
    "cache_write_per_mtok",
    "reasoning_per_mtok",
)
OPTIONAL_PRICES = PRICE_FIELDS[2:]
FIELDS = ("model", "provider", *PRICE_FIELDS, "effective_from")
MAX_MODEL = 200
MAX_PROVIDER = 64
MAX_PRICE = Decimal(10) ** (PRICE_DIGITS - PRICE_PLACES)  # exclusive
# What the OpenAPI schema states (and `clean_price` checks).
DECIMAL_PATTERN = r"^[0-9]{1,10}(\.[0-9]{1,10})?$"
MODEL_PATTERN = r"^[^\s*\u0000-\u001f\u007f]+\*?$"
PROVIDER_PATTERN = r"^[^\s*\u0000-\u001f\u007f]*$"
CONTROL = frozenset(chr(c) for c in (*range(0x20), 0x7F))
MAX_PRICES = 1000  # per team: the whole list is compiled into every process


class InvalidPrice(InvalidInput):
    pass


class PriceExists(Exception):
    def __init__(self, model: str, provider: str, effective_from: datetime | None) -> None:
        who = f"provider '{provider}'" if provider else "any provider"
        when = f"from {effective_from.isoformat()}" if effective_from else "with no effective_from"
        super().__init__(f"This team already has a price for '{model}' ({who}) {when}.")


def _decimal(value: Any) -> Decimal | str:
    """A price as a Decimal, or what is wrong with it. A JSON number is rounded to ``PRICE_PLACES``
    (a float is inexact anyway); a decimal string must fit them."""
    wrong = 'A number in USD per million tokens (a JSON number or a decimal string like "2.50").'
    if isinstance(value, bool) or not isinstance(value, int | float | str | Decimal):
        return wrong
    if isinstance(value, str) and not re.fullmatch(r"[0-9]+(\.[0-9]+)?", value):
        return "Must be 0 or more." if value.strip().startswith("-") else wrong
    try:
        number = Decimal(repr(value)) if isinstance(value, float) else Decimal(value)
    except InvalidOperation:
        return wrong
    if not number.is_finite():
        return "A finite number."
    if number < 0:
        return "Must be 0 or more."
    if number >= MAX_PRICE:
        return f"Must be less than {MAX_PRICE:,}."
    places = Decimal(1).scaleb(-PRICE_PLACES)
    if isinstance(value, float):
        return number.quantize(places, rounding=ROUND_HALF_EVEN)
    exponent = number.normalize().as_tuple().exponent
    if isinstance(exponent, int) and exponent < -PRICE_PLACES:
        return f"At most {PRICE_PLACES} decimal places."
    return number


def _model(value: Any) -> str | list[str]:
    if not isinstance(value, str) or not value:
        return ["A model name, or a prefix ending in * (`ft:gpt-4o-mini:acme:*`)."]
    model = value.lower()
    if len(model) > MAX_MODEL:
        return [f"At most {MAX_MODEL} characters."]
    if any(ch.isspace() or ch in CONTROL for ch in model):
        return ["No spaces or control characters."]
    if "*" in model[:-1]:
        return ["A * may only end the name (a prefix: `my-model-*`)."]
    if model == "*":
        return ["Give the prefix before the *: a price for every model is not a team price."]
    return model


def _provider(value: Any) -> str | list[str]:
    if value is None:
        return ""
    if not isinstance(value, str):
        return ["A provider id (`openai`, `azure`…), or empty for any provider."]
    provider = value.lower()
    if len(provider) > MAX_PROVIDER:
        return [f"At most {MAX_PROVIDER} characters."]
    if any(ch.isspace() or ch in CONTROL or ch == "*" for ch in provider):
        return ["No spaces, * or control characters."]
    return provider


def _time(value: Any) -> datetime | None | list[str]:
    if value is None:
        return None
    parsed = parse_datetime(value) if isinstance(value, str) else None
    if parsed is None:
        return ["An ISO 8601 time (`2026-11-01T00:00:00Z`), or null for always."]
    if timezone.is_naive(parsed):
        return parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC)


def clean_price(data: Mapping[str, Any], *, partial: bool = False, form: bool = False) -> dict[str, Any]:
    """The fields of a price from a request body; `InvalidPrice` naming each field at fault. With
    ``partial`` (a PATCH) only the fields given are checked and returned. Optional fields take null
    for "none": any provider, no own rate, always; so does an empty field of the page's ``form``."""
    errors: dict[str, list[str]] = {}
    out: dict[str, Any] = {}
    if form:
        data = {name: None if value == "" and name != "model" else value for name, value in data.items()}
    for name in data:
        if name not in FIELDS:
            errors.setdefault(str(name)[:100], []).append(f"Unknown field; a price has {', '.join(FIELDS)}.")
    for name in REQUIRED:
        if not partial and (name not in data or data[name] is None):
            errors.setdefault(name, []).append("This field is required.")
    if "model" in data and data["model"] is not None:
        model = _model(data["model"])
        if isinstance(model, list):
            errors["model"] = model
        else:
            out["model"] = model
    elif partial and "model" in data:
        errors.setdefault("model", []).append("This field may not be null.")
    if "provider" in data:
        provider = _provider(data["provider"])
        if isinstance(provider, list):
            errors["provider"] = provider
        else:
            out["provider"] = provider
    for name in PRICE_FIELDS:
        if name not in data:
            continue
        value = data[name]
        if value is None:
            if name in OPTIONAL_PRICES:
                out[name] = None
            elif partial:
                errors.setdefault(name, []).append("This field may not be null.")
            continue
        number = _decimal(value)
        if isinstance(number, str):
            errors[name] = [number]
        else:
            out[name] = number
    if "effective_from" in data:
        when = _time(data["effective_from"])
        if isinstance(when, list):
            errors["effective_from"] = when
        else:
            out["effective_from"] = when
    if errors:
        raise InvalidPrice(errors)
    return out


def price_create(*, team_id: int, data: Mapping[str, Any], actor: str) -> TeamPrice:
    """A new price from `clean_price`'s fields."""
    if TeamPrice.objects.filter(team_id=team_id).count() >= MAX_PRICES:
        raise InvalidPrice({"model": [f"A team has at most {MAX_PRICES} prices: delete one first."]})
    price = TeamPrice(team_id=team_id, **data)
    now = timezone.now()
    price.created_at = price.updated_at = now
    with transaction.atomic():
        _save(price)
        audit(team=team_id, actor=actor, action="price.create", target=price.model, data=price_audit(price))
    _changed(team_id)
    return price


def price_update(*, price: TeamPrice, changes: Mapping[str, Any], actor: str) -> TeamPrice:
    """Apply a PATCH (``changes``: `clean_price(..., partial=True)`'s fields); the revision goes up by
    one, so traces priced by the old revision say so (``price_version``)."""
    before = price_audit(price)
    for name, value in changes.items():
        setattr(price, name, value)
    price.revision += 1
    price.updated_at = timezone.now()
    with transaction.atomic():
        _save(price)
        after = price_audit(price)
        audit(
            team=price.team_id,
            actor=actor,
            action="price.update",
            target=price.model,
            data={**after, "changed": {k: {"from": before[k], "to": after[k]} for k in after if before[k] != after[k]}},
        )
    _changed(price.team_id)
    return price


def price_delete(*, price: TeamPrice, actor: str) -> None:
    team_id = price.team_id
    data = price_audit(price)
    with transaction.atomic():
        price.delete()
        audit(team=team_id, actor=actor, action="price.delete", target=str(data["model"]), data=data)
    _changed(team_id)


def decimal_text(value: Decimal | None) -> str | None:
    """A stored price as the API shows it: a decimal string without trailing zeros (`"2.5"`)."""
    if value is None:
        return None
    text = format(value, "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


def price_audit(price: TeamPrice) -> dict[str, object]:
    return {
        "id": price.pk,
        "model": price.model,
        "provider": price.provider,
        **{name: decimal_text(getattr(price, name)) for name in PRICE_FIELDS},
        "effective_from": price.effective_from.isoformat() if price.effective_from else None,
        "revision": price.revision,
    }


def _save(price: TeamPrice) -> None:
    try:
        with transaction.atomic():
            price.save()
    except IntegrityError:
        raise PriceExists(price.model, price.provider, price.effective_from) from None


def _changed(team_id: int) -> None:
    compiled_cache.publish(team_id)
