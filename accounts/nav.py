"""The dashboard's navigation, as data: a page adds one `NavItem` here and the top bar shows it.

An item shows when its URL name resolves (the page exists) and the member's role allows its
permission. ``section="settings"`` items are listed on the settings pages and in the user menu.
Main items are shown in groups (``group``, in the order of ``GROUPS``): the side bar at 1024 px and
wider, the "Menu" panel of the top bar below that (templates/dashboard/nav.html).
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
    group: str = "Observe"


# The side bar's headings, in order. A group with no item shown is left out.
GROUPS = ("Observe", "Route", "Report")

# No "Overview": `/` is the feed once a team has traces (and "send your first trace" before), so a
# second item for it would name one page twice; the brand links to `/`.
NAV: list[NavItem] = [
    NavItem("Traces", "trace-feed"),
    NavItem("Runs", "run-list"),
    NavItem("Sessions", "trace-sessions"),
    NavItem("Users", "trace-users"),
    NavItem("Analytics", "analytics-page"),
    NavItem("Dashboards", "dashboards"),
    NavItem("Routing", "routing-page", group="Route"),
    NavItem("Integrations", "integrations-page", group="Route"),
    NavItem("Reports", "reports", group="Report"),
    NavItem("Alerts", "alerts", group="Report"),
    NavItem("API keys", "settings-api-keys", section="settings"),
    NavItem("Team", "settings-team", section="settings"),
    NavItem("Privacy", "settings-privacy", section="settings"),
    NavItem("Prices", "settings-prices", section="settings"),
    NavItem("Re-pricing", "settings-reprice", section="settings"),
    NavItem("Advanced", "settings-advanced", section="settings"),
]


@dataclass(frozen=True)
class NavLink:
    label: str
    url: str
    active: bool
    group: str = "Observe"


@dataclass(frozen=True)
class NavGroup:
    label: str
    links: list[NavLink]


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
        links.append(NavLink(item.label, url, active, item.group))
    return links


def nav_groups(links: list[NavLink]) -> list[NavGroup]:
    """The main links by group, groups in ``GROUPS`` order (then any other, as first met), each
    group's links in ``NAV`` order: an item added anywhere in ``NAV`` lands under its heading."""
    order = list(GROUPS) + [link.group for link in links if link.group not in GROUPS]
    by_group = {name: [link for link in links if link.group == name] for name in dict.fromkeys(order)}
    return [NavGroup(name, items) for name, items in by_group.items() if items]
