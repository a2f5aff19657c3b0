"""Sign up, log in and out, password reset, and the team a user works in."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse_lazy
from django.views.decorators.http import require_POST

from config.problems import InvalidInput

from .. import services
from ..access import SESSION_TEAM, switch_team
from ..forms import LoginForm, PasswordResetForm, SignupForm, TeamForm

BACKEND = "accounts.backends.UsernameOrEmailBackend"


def signup(request: HttpRequest) -> HttpResponse:
    if request.user.is_authenticated:
        return redirect("home")
    form = SignupForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            user = services.user_signup(email=form.cleaned_data["email"], password=form.cleaned_data["password"])
        except InvalidInput as error:
            _add_errors(form, error)
        else:
            login(request, user, backend=BACKEND)
            return redirect("home")
    return render(request, "accounts/signup.html", {"form": form}, status=400 if form.errors else 200)


class LoginView(auth_views.LoginView):
    template_name = "accounts/login.html"
    authentication_form = LoginForm
    redirect_authenticated_user = True

    def form_invalid(self, form: LoginForm) -> HttpResponse:  # type: ignore[override]
        return self.render_to_response(self.get_context_data(form=form), status=400)


class LogoutView(auth_views.LogoutView):
    """POST only (Django's own rule since 5.0): a link or an image cannot log anyone out."""


class PasswordResetView(auth_views.PasswordResetView):
    template_name = "accounts/password_reset.html"
    form_class = PasswordResetForm
    email_template_name = "accounts/email/password_reset.txt"
    subject_template_name = "accounts/email/password_reset_subject.txt"
    success_url = reverse_lazy("password-reset-done")


class PasswordResetDoneView(auth_views.PasswordResetDoneView):
    template_name = "accounts/password_reset_done.html"


class PasswordResetConfirmView(auth_views.PasswordResetConfirmView):
    template_name = "accounts/password_reset_confirm.html"
    success_url = reverse_lazy("password-reset-complete")
    post_reset_login = True
    post_reset_login_backend = BACKEND


class PasswordResetCompleteView(auth_views.PasswordResetCompleteView):
    template_name = "accounts/password_reset_complete.html"


@login_required
def team_new(request: HttpRequest) -> HttpResponse:
    form = TeamForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            team = services.team_create_unique(name=form.cleaned_data["name"], owner=request.user)
        except InvalidInput as error:
            _add_errors(form, error)
        else:
            request.session[SESSION_TEAM] = team.pk
            messages.success(request, f"Team “{team.name}” created. You are its owner.")
            return redirect("home")
    return render(request, "accounts/team_new.html", {"form": form}, status=400 if form.errors else 200)


@login_required
@require_POST
def team_switch(request: HttpRequest) -> HttpResponse:
    try:
        team_id = int(request.POST.get("team", ""))
    except ValueError:
        raise Http404 from None
    if switch_team(request, team_id) is None:
        raise Http404("Not a team of yours.")
    return redirect("home")


def _add_errors(form: SignupForm | TeamForm, error: InvalidInput) -> None:
    for field, texts in error.errors.items():
        for text in texts:
            form.add_error(field if field in form.fields else None, text)
