"""Rules stored while a destination's ``url`` could redirect a webhook integration (issue 20).

A rule destination ``{"name": "my-hook", "url": "https://elsewhere/"}`` used to send my-hook's
stored headers and signature to that URL. Delivery now treats every such destination as an ad-hoc
webhook (`integrations.selectors.resolve_target`), and saving one is refused; this migration
rewrites the stored rules so that they keep doing what they now do and the rule set can be saved
again unchanged:

* a url equal to the integration's own URL is dropped (the destination is that integration);
* another url makes the destination an ad-hoc webhook, stored as ``webhook`` with its url.

A destination is left as stored (it still works as an ad-hoc webhook under the integration's name)
when the rename would collide with a ``webhook`` destination beside it, above it or in its own
fallbacks, or when the team's PII policy has an entry for the integration (an ad-hoc webhook under
its own name keeps that entry, so nothing goes out less redacted than before). Saving such a rule
set again asks for the url to be changed, with a 400 naming the field.
"""

from __future__ import annotations

import json
from typing import Any

from django.db import migrations
from django.db.models import F
from django.utils import timezone

AD_HOC = "webhook"
WEBHOOK_NAMES = ("webhook", "custom-webhook")


def _own_urls(Integration: Any, team_id: int) -> dict[str, str]:
    rows = Integration.objects.filter(team_id=team_id, platform="webhook").values_list("name", "config")
    return {name: str((config or {}).get("url") or "").strip() for name, config in rows}


def fixed(destinations: list[Any], hooks: dict[str, str], keep: set[str], parent: str | None = None) -> bool:
    """Rewrite ``destinations`` (and their fallbacks) in place; True when something changed."""
    changed = False
    names = {d.get("name") for d in destinations if isinstance(d, dict)}
    for dest in destinations:
        if not isinstance(dest, dict):
            continue
        fallback = dest.get("fallback") if isinstance(dest.get("fallback"), list) else []
        changed |= fixed(fallback, hooks, keep, parent=dest.get("name"))
        name, url = dest.get("name"), str(dest.get("url") or "").strip()
        if not url or name not in hooks or name in WEBHOOK_NAMES:
            continue
        if hooks[name] == url:
            del dest["url"]
            changed = True
            continue
        below = {f.get("name") for f in fallback if isinstance(f, dict)}
        if name in keep or AD_HOC in names or AD_HOC in below or parent == AD_HOC:
            continue
        dest["name"] = AD_HOC
        names.add(AD_HOC)
        changed = True
    return changed


def forwards(apps: Any, schema_editor: Any) -> None:
    RoutingRule = apps.get_model("routing", "RoutingRule")
    RuleSet = apps.get_model("routing", "RuleSet")
    Integration = apps.get_model("integrations", "Integration")
    PiiPolicy = apps.get_model("privacy", "PiiPolicy")
    changed_teams: set[int] = set()
    hooks_of: dict[int, dict[str, str]] = {}
    for rule in RoutingRule.objects.order_by("pk").iterator():
        if rule.team_id not in hooks_of:
            hooks_of[rule.team_id] = _own_urls(Integration, rule.team_id)
        hooks = hooks_of[rule.team_id]
        if not hooks or '"url"' not in json.dumps(rule.destinations):
            continue
        policy = PiiPolicy.objects.filter(team_id=rule.team_id).values_list("destinations", flat=True).first()
        keep = set(policy or {})
        if fixed(rule.destinations, hooks, keep):
            rule.save(update_fields=["destinations"])
            changed_teams.add(rule.team_id)
    # A stored set that changed is a new version: a client holding the old ETag reads it again.
    for team_id in changed_teams:
        RuleSet.objects.filter(team_id=team_id).update(version=F("version") + 1, updated_at=timezone.now())


class Migration(migrations.Migration):
    dependencies = [
        ("routing", "0007_routingrule_service_owner"),
        ("integrations", "0001_initial"),
        ("privacy", "0001_initial"),
    ]

    operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]
