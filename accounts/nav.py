"""The dashboard's navigation, as data: a page adds one `NavItem` here and the top bar shows it.

An item shows when its URL name resolves (the page exists) and the member's role allows its
permission. ``section="settings"`` items are listed on the settings pages and in the user menu.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.urls import NoReverseMatch, reverse

from .models import Membership
from .roles import Permission


@dataclass(frozen=True)
class NavItem:
    label: str
    url_name: str
    permission: Permission = Permission.READ
    section: str = "main"


# No "Overview": `/` is the feed once a team has traces (and "send your first trace" before), so a
# second item for it would name one page twice; the brand links to `/`.
NAV: list[NavItem] = [
    NavItem("Traces", "trace-feed"),
    NavItem("Sessions", "trace-sessions"),
    NavItem("Users", "trace-users"),
    NavItem("Analytics", "analytics-page"),
    NavItem("Dashboards", "dashboards"),
    NavItem("Routing", "routing-page"),
    NavItem("Integrations", "integrations-page"),
    NavItem("Reports", "reports"),
    NavItem("Alerts", "alerts"),
    NavItem("API keys", "settings-api-keys", section="settings"),
    NavItem("Team", "settings-team", section="settings"),
    NavItem("Privacy", "settings-privacy", section="settings"),
    NavItem("Advanced", "settings-advanced", section="settings"),
]


@dataclass(frozen=True)
class NavLink:
    label: str
    url: str
    active: bool


def nav_links(path: str, membership: Membership | None, section: str) -> list[NavLink]:
    links = []
    for item in NAV:
        if item.section != section or membership is None or not membership.allows(item.permission):
            continue
        try:
            url = reverse(item.url_name)
        except NoReverseMatch:
            continue
        active = path == url if url == "/" else path == url or path.startswith(url.rstrip("/") + "/")
        links.append(NavLink(item.label, url, active))
    return links
