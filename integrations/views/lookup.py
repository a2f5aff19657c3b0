"""What every integration page starts from: the permission that manages them, and the team's
integration or a 404."""

from __future__ import annotations

from django.http import Http404

from accounts.access import DashboardRequest
from accounts.roles import Permission

from .. import selectors
from ..models import Integration

MANAGE = Permission.MANAGE_INTEGRATIONS


def integration_or_404(request: DashboardRequest, integration_id: int) -> Integration:
    integration = selectors.integration_for_team(request.team.pk, integration_id)
    if integration is None:
        raise Http404("No such integration in this team.")
    return integration
