"""Template context for every dashboard page: while the current team's debug mode is on, the banner
that says so (templates/dashboard/debug_banner.html), whichever page is open.

Lazy, and cheap when read: `debugmode.state.active` is the hot-path check (a dict look-up, the shared
state at most once a second); the row is read only when it is on, for the time it ends."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from django.utils.functional import SimpleLazyObject

from accounts.access import current_membership
from debugmode import selectors, state


def debug_banner(request: HttpRequest) -> dict[str, Any]:
    def banner() -> dict[str, Any] | None:
        membership = current_membership(request)
        if membership is None or not state.active(membership.team_id):
            return None
        mode = selectors.debug_mode(membership.team_id)
        if not mode.is_on():  # switched off within the last second
            return None
        return {"until": mode.until, "minutes_left": selectors.minutes_left(mode)}

    return {"debug_banner": SimpleLazyObject(banner)}
