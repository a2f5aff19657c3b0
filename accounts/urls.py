from django.urls import URLPattern, path

from .views import auth, keys, team

urlpatterns: list[URLPattern] = [
    path("signup", auth.signup, name="signup"),
    path("login", auth.LoginView.as_view(), name="login"),
    path("logout", auth.LogoutView.as_view(), name="logout"),
    path("password-reset", auth.PasswordResetView.as_view(), name="password-reset"),
    path("password-reset/sent", auth.PasswordResetDoneView.as_view(), name="password-reset-done"),
    path("password-reset/<uidb64>/<token>", auth.PasswordResetConfirmView.as_view(), name="password-reset-confirm"),
    path("password-reset/done", auth.PasswordResetCompleteView.as_view(), name="password-reset-complete"),
    path("teams/new", auth.team_new, name="team-new"),
    path("teams/switch", auth.team_switch, name="team-switch"),
    path("invite/<str:token>", team.invite_accept, name="invite-accept"),
    path("settings/team", team.settings_team, name="settings-team"),
    path("settings/team/invite", team.team_invite, name="team-invite"),
    path("settings/team/invites/<int:invitation_id>/revoke", team.invite_revoke, name="team-invite-revoke"),
    path("settings/team/members/<int:membership_id>/role", team.member_role, name="team-member-role"),
    path("settings/team/members/<int:membership_id>/remove", team.member_remove, name="team-member-remove"),
    path("settings/team/leave", team.team_leave, name="team-leave"),
    path("settings/team/rename", team.team_rename, name="team-rename"),
    path("settings/team/delete", team.team_delete, name="team-delete"),
    path("settings/api-keys", keys.api_keys, name="settings-api-keys"),
    path("settings/api-keys/new", keys.api_key_create, name="api-key-create"),
    path("settings/api-keys/<int:key_id>/revoke", keys.api_key_revoke, name="api-key-revoke"),
]
