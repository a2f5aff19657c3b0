"""Destinations in rules, checked against the team's integrations and platforms."""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any

from integrations.models import Integration, Platform
from integrations.registry import canonical_platform
from integrations.selectors import integration_names_and_platforms, own_url
from integrations.urlguard import url_refusal

MAX_FALLBACKS = 5
MAX_FALLBACK_DEPTH = 3
MAX_TAGS = 50
MAX_TAG_LENGTH = 200
WEBHOOK_NAMES = ("webhook", "custom-webhook")
DESTINATION_KEYS = frozenset({"name", "platform", "sample_rate", "tags", "url", "fallback"})


class DestinationChecker:
    """Validates destinations against the team's integrations (loaded once per request)."""

    def __init__(self, team_id: int) -> None:
        # Every name a rule may use (the exporters' contract), and each integration's platform, for
        # the checks that depend on it (a url only on webhooks, name/platform agreeing).
        self.allowed = integration_names_and_platforms(team_id)
        rows = Integration.objects.filter(team_id=team_id).values_list("name", "platform", "config")
        self.platform_of: dict[str, str] = {name: platform for name, platform, _ in rows}
        self.platforms: set[str] = set(self.platform_of.values())
        # Each webhook integration's own URL: a rule may name it with that URL, never with another.
        self.webhook_url: dict[str, str | None] = {name: own_url(platform, config) for name, platform, config in rows}

    def known(self) -> list[str]:
        return sorted(set(self.platform_of) | self.platforms | {"webhook"})

    def clean(
        self, raw: Any, path: str, errors: dict[str, list[str]], *, depth: int = 0, parent: str | None = None
    ) -> dict[str, Any] | None:
        """A destination (name or object) → its stored form ``{name, sample_rate, tags, url?, fallback}``,
        or None after adding messages to ``errors`` under ``path``."""
        in_fallback = depth > 0
        if isinstance(raw, str):
            obj: Mapping[str, Any] = {"name": raw}
        elif isinstance(raw, Mapping):
            obj = raw
            unknown = sorted(str(k) for k in obj if k not in DESTINATION_KEYS)
            for key in unknown:
                errors.setdefault(f"{path}.{key}", []).append(
                    f"Unknown field; a destination has {', '.join(sorted(DESTINATION_KEYS))}."
                )
            if unknown:
                return None
        else:
            errors.setdefault(path, []).append("A destination is a name (string) or an object.")
            return None

        ok = True
        name_key = "name" if "name" in obj else "platform"
        raw_name = obj.get(name_key)
        if not isinstance(raw_name, str) or not raw_name.strip():
            where = path if isinstance(raw, str) else f"{path}.{name_key}"
            errors.setdefault(where, []).append("Name the destination: an integration name or a platform.")
            return None
        name_path = path if isinstance(raw, str) else f"{path}.{name_key}"
        url = obj.get("url")
        if url is not None and not isinstance(url, str):
            errors.setdefault(f"{path}.url", []).append("Must be a string.")
            ok = False
            url = None
        url = url.strip() if url else None

        name, platform = self._resolve(raw_name.strip(), bool(url), name_path, errors)
        if url is not None and platform == Platform.WEBHOOK and name is not None:
            name, url = self._webhook_url(raw_name.strip(), name, url, f"{path}.url", errors)
        if name is None:
            ok = False
        if "name" in obj and "platform" in obj and name is not None:
            wanted = canonical_platform(str(obj["platform"])) if isinstance(obj["platform"], str) else None
            if wanted != platform:
                errors.setdefault(f"{path}.platform", []).append(
                    f"'{name}' is a {platform} integration, not {obj['platform']!r}."
                )
                ok = False
        if url is not None and name is not None:
            if platform != Platform.WEBHOOK:
                errors.setdefault(f"{path}.url", []).append("Only webhook destinations take a url.")
                ok = False
            else:
                refusal = url_refusal(url)
                if refusal:
                    errors.setdefault(f"{path}.url", []).append(refusal)
                    ok = False
        if name is not None and parent is not None and name == parent:
            errors.setdefault(name_path, []).append("A destination cannot fall back to itself.")
            ok = False

        rate = obj.get("sample_rate", 1.0)
        if isinstance(rate, bool) or not isinstance(rate, int | float) or not 0.0 <= float(rate) <= 1.0:
            errors.setdefault(f"{path}.sample_rate", []).append("Must be a number from 0 to 1.")
            ok = False
        elif in_fallback and float(rate) != 1.0:
            errors.setdefault(f"{path}.sample_rate", []).append(
                "Fallbacks are not sampled: they stand in for a trace already selected."
            )
            ok = False

        tags = obj.get("tags", [])
        if not isinstance(tags, list) or len(tags) > MAX_TAGS:
            errors.setdefault(f"{path}.tags", []).append(f"Must be a list of at most {MAX_TAGS} strings.")
            ok = False
        elif not all(isinstance(t, str) and t and len(t) <= MAX_TAG_LENGTH for t in tags):
            errors.setdefault(f"{path}.tags", []).append(
                f"Each tag is a non-empty string of at most {MAX_TAG_LENGTH} characters."
            )
            ok = False

        fallback_raw = obj.get("fallback", [])
        fallback: list[dict[str, Any]] = []
        if not isinstance(fallback_raw, list):
            errors.setdefault(f"{path}.fallback", []).append("Must be a list of destinations.")
            ok = False
        elif fallback_raw and depth + 1 > MAX_FALLBACK_DEPTH:
            errors.setdefault(f"{path}.fallback", []).append(f"Fallbacks nest at most {MAX_FALLBACK_DEPTH} deep.")
            ok = False
        elif len(fallback_raw) > MAX_FALLBACKS:
            errors.setdefault(f"{path}.fallback", []).append(f"At most {MAX_FALLBACKS} fallbacks per destination.")
            ok = False
        else:
            for j, item in enumerate(fallback_raw):
                cleaned = self.clean(item, f"{path}.fallback[{j}]", errors, depth=depth + 1, parent=name)
                if cleaned is None:
                    ok = False
                else:
                    fallback.append(cleaned)
        if not ok or name is None:
            return None
        out: dict[str, Any] = {"name": name, "sample_rate": float(rate), "tags": list(dict.fromkeys(tags))}
        if url:
            out["url"] = url
        out["fallback"] = fallback
        return out

    def _webhook_url(
        self, given: str, name: str, url: str, path: str, errors: dict[str, list[str]]
    ) -> tuple[str | None, str | None]:
        """(stored name, url) of a webhook destination given with a url. A url always makes an ad-hoc
        webhook (stored as ``webhook``: no integration's headers, secret or tags go with it), except
        a webhook integration named with its own URL, which is that integration (the url is dropped).
        Naming an integration with another URL is refused: its credentials stay at its own URL."""
        own = self.webhook_url.get(name)
        if own is not None and url == own:
            return name, None
        if canonical_platform(given) == Platform.WEBHOOK and given.lower() in WEBHOOK_NAMES:
            return Platform.WEBHOOK.value, url
        errors.setdefault(path, []).append(
            f"'{name}' is a webhook integration, which sends only to its own URL (with its own headers and "
            "signing secret). Leave the url out to send to it, or name the destination 'webhook' for an ad-hoc "
            "webhook to this URL (sent with no stored headers, secret or tags)."
        )
        return None, None

    def _resolve(
        self, name: str, has_url: bool, path: str, errors: dict[str, list[str]]
    ) -> tuple[str | None, str | None]:
        """(stored name, platform): an integration's own name, else the canonical platform name."""
        if name in self.platform_of:
            return name, self.platform_of[name]
        platform = canonical_platform(name)
        if platform is not None and (name in self.allowed or name.lower() in self.allowed):
            if platform in self.platforms or (platform == Platform.WEBHOOK and has_url):
                return platform, platform
        if platform == Platform.WEBHOOK:
            errors.setdefault(path, []).append(
                f"'{name}' needs a url, or a webhook integration in this team to send to."
            )
        elif platform is not None:
            errors.setdefault(path, []).append(
                f"Unknown destination '{name}': this team has no {platform} integration. Add one first."
            )
        else:
            known = self.known()
            hint = difflib.get_close_matches(name, known, n=1)
            suggestion = f" Did you mean '{hint[0]}'?" if hint else ""
            listing = ", ".join(known) if known else "none yet"
            errors.setdefault(path, []).append(
                f"Unknown destination '{name}': not an integration name or platform of this team.{suggestion} "
                f"Known: {listing}."
            )
        return None, None
