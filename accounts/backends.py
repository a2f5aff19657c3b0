"""Signing in with the username or the e-mail address.

People who sign up have their e-mail as their username; the operator's bootstrap login is `admin`
with the e-mail `admin@localhost` (`manage.py bootstrap`). Either name works on the dashboard's log-in
form and the CLI's `tracerelay login` (both call `authenticate`).
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.models import User
from django.http import HttpRequest


class UsernameOrEmailBackend(ModelBackend):
    def authenticate(
        self, request: HttpRequest | None, username: str | None = None, password: str | None = None, **kwargs: Any
    ) -> User | None:
        User = get_user_model()
        if username is None:
            username = kwargs.get(User.USERNAME_FIELD)
        if not username or password is None:
            return None
        users = User._default_manager
        user = users.filter(**{User.USERNAME_FIELD: username}).first()
        if user is None and "@" in username:
            # An address that is not a username: the one account with it (two accounts sharing an
            # address sign in with their usernames).
            found = list(users.filter(email__iexact=username)[:2])
            user = found[0] if len(found) == 1 else None
        if user is None:
            User().set_password(password)  # (as ModelBackend: an unknown name costs a hash too)
            return None
        if user.check_password(password) and self.user_can_authenticate(user):
            return user
        return None
