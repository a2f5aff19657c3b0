from django.urls import URLPattern, path

from . import api

urlpatterns: list[URLPattern] = [
    path("auth/signup", api.SignupView.as_view(), name="auth-signup"),
    path("auth/login", api.LoginView.as_view(), name="auth-login"),
    path("auth/logout", api.LogoutView.as_view(), name="auth-logout"),
    path("auth/me", api.MeView.as_view(), name="auth-me"),
    path("teams", api.TeamListView.as_view(), name="teams"),
    path("teams/<int:team_id>/keys", api.TeamKeysView.as_view(), name="team-keys"),
    path("teams/<int:team_id>/keys/<int:key_id>", api.TeamKeyView.as_view(), name="team-key"),
]
