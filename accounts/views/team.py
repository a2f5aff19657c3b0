"""`/settings/team`: members and roles, invitations, leaving; and accepting an invitation."""

from __future__ import annotations

import logging
import smtplib
from typing import Any

from django.contrib import messages
from django.contrib.auth import login
from django.core.mail import send_mail
from django.db import transaction
from django.db.models import Case, IntegerField, Value, When
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_POST

from config.mail import undelivered_reason
from config.problems import InvalidInput

from .. import services
from ..access import SESSION_TEAM, DashboardRequest, switch_team, team_view
from ..forms import InviteForm, RoleForm, SignupForm, TeamForm
from ..models import Invitation, Membership, Role
from ..roles import ROLE_DESCRIPTIONS, Permission
from .auth import BACKEND

log = logging.getLogger(__name__)

_ROLE_ORDER = Case(*(When(role=role, then=Value(i)) for i, role in enumerate(Role.values)), output_field=IntegerField())


def _page(request: DashboardRequest, status: int = 200, **extra: Any) -> HttpResponse:
    team = request.team
    context = {
        "members": Membership.objects.filter(team=team)
        .select_related("user")
        .annotate(rank=_ROLE_ORDER)
        .order_by("rank", "user__username"),
        "invitations": Invitation.objects.filter(
            team=team, accepted_at=None, revoked_at=None, expires_at__gt=timezone.now()
        ).order_by("-created_at"),
        "invite_form": InviteForm(),
        "team_form": TeamForm(initial={"name": team.name}),
        "roles": [(role, label, ROLE_DESCRIPTIONS[role]) for role, label in Role.choices],
        "role_choices": Role.choices,
        **extra,
    }
    return render(request, "accounts/team.html", context, status=status)


@team_view()
def settings_team(request: DashboardRequest) -> HttpResponse:
    return _page(request)


@require_POST
@team_view(Permission.MANAGE_MEMBERS)
def team_invite(request: DashboardRequest) -> HttpResponse:
    form = InviteForm(request.POST)
    if form.is_valid():
        try:
            invitation, token = services.invitation_create(
                team=request.team,
                email=form.cleaned_data["email"],
                role=form.cleaned_data["role"],
                invited_by=request.user,
            )
        except InvalidInput as error:
            for field, texts in error.errors.items():
                for text in texts:
                    form.add_error(field if field in form.fields else None, text)
        else:
            link = request.build_absolute_uri(reverse("invite-accept", args=[token]))
            sent = _send_invitation(request, invitation, link)
            # Handed to a backend that only writes to the log (no EMAIL_URL): nobody got it.
            unsent = "the mail server failed (see the log)" if not sent else undelivered_reason()
            invite = {"email": invitation.email, "link": link, "sent": not unsent, "unsent": unsent}
            return _page(request, status=201, new_invite=invite)
    return _page(request, status=400, invite_form=form)


def _send_invitation(request: DashboardRequest, invitation: Invitation, link: str) -> bool:
    context = {"invitation": invitation, "link": link, "inviter": request.user.get_username()}
    try:
        send_mail(
            subject=f"Join {invitation.team.name} on tracerelay",
            message=render_to_string("accounts/email/invitation.txt", context),
            from_email=None,
            recipient_list=[invitation.email],
        )
    except (smtplib.SMTPException, OSError):
        log.exception("Could not send the invitation e-mail to %s", invitation.email)
        return False
    return True


@require_POST
@team_view(Permission.MANAGE_MEMBERS)
def team_rename(request: DashboardRequest) -> HttpResponse:
    form = TeamForm(request.POST)
    if form.is_valid():
        try:
            services.team_rename(team=request.team, name=form.cleaned_data["name"], actor=request.user)
        except InvalidInput as error:
            for texts in error.errors.values():
                for text in texts:
                    form.add_error("name", text)
        else:
            messages.success(request, f"The team is now called {request.team.name}.")
            return redirect("settings-team")
    return _page(request, status=400, team_form=form)


@require_POST
@team_view(Permission.MANAGE_MEMBERS)
def team_delete(request: DashboardRequest) -> HttpResponse:
    name = request.team.name
    try:
        services.team_delete(team=request.team, confirm=request.POST.get("confirm", ""), actor=request.user)
    except InvalidInput as refused:
        return _page(request, status=400, delete_error=next(iter(refused.errors.values()))[0])
    request.session.pop(SESSION_TEAM, None)  # the next page picks another team of theirs, or /teams/new
    messages.success(request, f"{name} and everything in it was deleted.")
    return redirect("home")


@require_POST
@team_view(Permission.MANAGE_MEMBERS)
def invite_revoke(request: DashboardRequest, invitation_id: int) -> HttpResponse:
    invitation = get_object_or_404(Invitation, pk=invitation_id, team=request.team)
    services.invitation_revoke(invitation=invitation, actor=request.user)
    messages.success(request, f"Invitation to {invitation.email} revoked.")
    return redirect("settings-team")


@require_POST
@team_view(Permission.MANAGE_MEMBERS)
def member_role(request: DashboardRequest, membership_id: int) -> HttpResponse:
    membership = get_object_or_404(Membership.objects.select_related("user"), pk=membership_id, team=request.team)
    form = RoleForm(request.POST)
    error = None
    if form.is_valid():
        try:
            services.membership_change_role(membership=membership, role=form.cleaned_data["role"], actor=request.user)
        except InvalidInput as refused:
            error = next(iter(refused.errors.values()))[0]
    else:
        error = "Choose one of the roles."
    if error:
        return _page(request, status=400, member_error={"id": membership.pk, "text": error})
    messages.success(request, f"{membership.user.get_username()} is now {form.cleaned_data['role']}.")
    return redirect("settings-team")


@require_POST
@team_view(Permission.MANAGE_MEMBERS)
def member_remove(request: DashboardRequest, membership_id: int) -> HttpResponse:
    membership = get_object_or_404(Membership.objects.select_related("user"), pk=membership_id, team=request.team)
    return _remove(request, membership)


@require_POST
@team_view()
def team_leave(request: DashboardRequest) -> HttpResponse:
    return _remove(request, request.membership)


def _remove(request: DashboardRequest, membership: Membership) -> HttpResponse:
    try:
        services.membership_remove(membership=membership, actor=request.user)
    except InvalidInput as refused:
        text = next(iter(refused.errors.values()))[0]
        return _page(request, status=400, member_error={"id": membership.pk, "text": text})
    if membership.user_id == request.user.pk:
        messages.success(request, f"You left {request.team.name}.")
        return redirect("home")
    messages.success(request, f"{membership.user.get_username()} was removed from the team.")
    return redirect("settings-team")


def invite_accept(request: HttpRequest, token: str) -> HttpResponse:
    invitation = services.invitation_for_token(token)
    if invitation is None:
        return render(request, "accounts/invite_invalid.html", {"reason": "unknown"}, status=404)
    if not invitation.is_pending:
        reason = "used" if invitation.accepted_at else "revoked" if invitation.revoked_at else "expired"
        return render(request, "accounts/invite_invalid.html", {"reason": reason, "invitation": invitation}, status=410)

    form = None
    if not request.user.is_authenticated:
        form = SignupForm(request.POST or None, fixed_email=invitation.email)
    if request.method == "POST":
        try:
            with transaction.atomic():
                if form is not None:
                    if not form.is_valid():
                        raise _FormInvalid
                    user = services.user_signup(
                        email=form.cleaned_data["email"], password=form.cleaned_data["password"], team_name=None
                    )
                else:
                    user = request.user
                services.invitation_accept(invitation=invitation, user=user)
        except _FormInvalid:
            pass
        except InvalidInput as refused:
            text = next(iter(refused.errors.values()))[0]
            if form is not None:
                form.add_error(None, text)
            else:
                return render(request, "accounts/invite_invalid.html", {"reason": "used"}, status=410)
        else:
            if form is not None:
                login(request, user, backend=BACKEND)
            switch_team(request, invitation.team_id)
            messages.success(request, f"Welcome to {invitation.team.name}. You joined as {invitation.role}.")
            return redirect("home")
    status = 400 if form is not None and form.errors else 200
    return render(request, "accounts/invite_accept.html", {"invitation": invitation, "form": form}, status=status)


class _FormInvalid(Exception):
    """Rolls back the sign-up transaction when the form is invalid."""
