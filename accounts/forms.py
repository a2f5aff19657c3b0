"""Dashboard forms for accounts: they validate input; the services in `services.py` do the writes."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.auth import get_user_model, password_validation
from django.contrib.auth.forms import AuthenticationForm
from django.contrib.auth.forms import PasswordResetForm as DjangoPasswordResetForm

from . import throttle
from .models import Environment, Role

_EMAIL_ATTRS = {"autocomplete": "email", "autocapitalize": "none", "spellcheck": "false"}


class SignupForm(forms.Form):
    email = forms.EmailField(label="Work e-mail", max_length=150, widget=forms.EmailInput(attrs=_EMAIL_ATTRS))
    password = forms.CharField(
        label="Password",
        strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
        help_text="At least 8 characters, not a common password, not like your e-mail.",
    )

    def __init__(self, *args: Any, fixed_email: str | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fixed_email = fixed_email
        if fixed_email:  # signing up from an invitation: the address it was sent to
            self.fields["email"].initial = fixed_email
            self.fields["email"].disabled = True

    def clean_email(self) -> str:
        email = self.fixed_email or self.cleaned_data["email"].strip().lower()
        if get_user_model().objects.filter(username__iexact=email).exists():
            raise forms.ValidationError("An account with this e-mail exists already. Log in instead.")
        return email

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        email, password = cleaned.get("email"), cleaned.get("password")
        if email and password:
            User = get_user_model()
            try:
                password_validation.validate_password(password, User(username=email, email=email))
            except forms.ValidationError as error:
                self.add_error("password", error)
        return cleaned


class LoginForm(AuthenticationForm):
    """Django's log-in form: the username or the e-mail (accounts.backends), with throttling
    (accounts.throttle)."""

    # A text field, not an e-mail one: the operator's bootstrap login ("admin") signs in here too.
    username = forms.CharField(
        label="Username or e-mail",
        max_length=150,
        widget=forms.TextInput(
            attrs={**_EMAIL_ATTRS, "autocomplete": "username", "inputmode": "email", "autofocus": True}
        ),
    )
    error_messages = {
        **AuthenticationForm.error_messages,
        "invalid_login": "That username or e-mail and password do not match an account.",
        "throttled": "Too many failed attempts. Try again in %(wait)s.",
    }

    def clean(self) -> dict[str, Any]:
        email = (self.cleaned_data.get("username") or "").strip().lower()
        self.cleaned_data["username"] = email
        ip = throttle.client_ip(self.request) if self.request else "unknown"
        wait = throttle.retry_after(ip, email)
        if wait:
            raise forms.ValidationError(
                self.error_messages["throttled"], code="throttled", params={"wait": throttle.describe_wait(wait)}
            )
        try:
            cleaned = super().clean()
        except forms.ValidationError:
            throttle.record_failure(ip, email)
            raise
        throttle.clear(ip, email)
        return cleaned


class PasswordResetForm(DjangoPasswordResetForm):
    email = forms.EmailField(label="E-mail", max_length=254, widget=forms.EmailInput(attrs=_EMAIL_ATTRS))


class TeamForm(forms.Form):
    name = forms.CharField(label="Team name", max_length=100)


class InviteForm(forms.Form):
    email = forms.EmailField(label="E-mail", max_length=150, widget=forms.EmailInput(attrs=_EMAIL_ATTRS))
    role = forms.ChoiceField(label="Role", choices=Role.choices, initial=Role.MEMBER)


class RoleForm(forms.Form):
    role = forms.ChoiceField(label="Role", choices=Role.choices)


class ApiKeyForm(forms.Form):
    name = forms.CharField(
        label="Name", max_length=100, required=False, help_text="What uses this key, e.g. “checkout service”."
    )
    environment = forms.ChoiceField(
        label="Environment",
        choices=[
            (Environment.PRODUCTION, "Production: full access"),
            (Environment.DEVELOPMENT, "Development: send and read, no changes"),
            (Environment.CI, "CI: send traces and read them"),
        ],
        initial=Environment.PRODUCTION,
    )
