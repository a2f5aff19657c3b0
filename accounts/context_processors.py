"""Template context for every dashboard page: the current team, the user's teams, the navigation.

Everything is lazy: the admin's pages run this processor too and use none of it.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from django.utils.functional import SimpleLazyObject

from .access import current_membership, user_memberships
from .nav import nav_groups, nav_links


def dashboard(request: HttpRequest) -> dict[str, Any]:
    def main_nav() -> list[Any]:
        return nav_links(request.path, current_membership(request), "main")

    links = SimpleLazyObject(main_nav)

    def main_nav_groups() -> list[Any]:
        return nav_groups(list(links))

    def settings_nav() -> list[Any]:
        return nav_links(request.path, current_membership(request), "settings")

    return {
        "current_membership": SimpleLazyObject(lambda: current_membership(request)),
        "user_memberships": SimpleLazyObject(lambda: user_memberships(request)),
        "main_nav": links,
        "main_nav_groups": SimpleLazyObject(main_nav_groups),
        "settings_nav": SimpleLazyObject(settings_nav),
    }
