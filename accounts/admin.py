"""The operator's admin: teams and members, API keys (created here they show the raw key once;
revoke in bulk), people's user tokens (the CLI's; list and revoke), and the audit log (read-only)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import Count, Q, QuerySet
from django.http import HttpRequest

from .models import ApiKey, AuditEvent, Membership, Team, UserToken
from .services import api_key_create, api_key_revoke, user_token_revoke


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0
    autocomplete_fields = ["user"]


@admin.register(Team)
class TeamAdmin(admin.ModelAdmin):
    list_display = ["name", "member_count", "active_key_count", "created_at"]
    search_fields = ["name"]
    ordering = ["name"]
    inlines = [MembershipInline]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Team]:
        return (
            super()
            .get_queryset(request)
            .annotate(
                _members=Count("memberships", distinct=True),
                _keys=Count("api_keys", filter=Q(api_keys__revoked_at__isnull=True), distinct=True),
            )
        )

    @admin.display(description="members", ordering="_members")
    def member_count(self, team: Any) -> int:
        return team._members

    @admin.display(description="active keys", ordering="_keys")
    def active_key_count(self, team: Any) -> int:
        return team._keys


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ["user", "team", "role", "created_at"]
    list_filter = ["role", "team"]
    search_fields = ["user__username", "user__email", "team__name"]
    autocomplete_fields = ["user", "team"]
    list_select_related = ["user", "team"]


class KeyStatusFilter(admin.SimpleListFilter):
    title = "status"
    parameter_name = "status"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("active", "Active"), ("revoked", "Revoked")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[ApiKey]) -> QuerySet[ApiKey]:
        if self.value() == "active":
            return queryset.filter(revoked_at__isnull=True)
        if self.value() == "revoked":
            return queryset.filter(revoked_at__isnull=False)
        return queryset


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    list_display = ["prefix", "name", "team", "environment", "status", "created_at", "last_used_at", "created_by"]
    list_filter = [KeyStatusFilter, "environment", "team"]
    search_fields = ["prefix", "name", "team__name"]
    list_select_related = ["team", "created_by"]
    ordering = ["-created_at"]
    actions = ["revoke_keys"]
    autocomplete_fields = ["team"]

    def get_fields(self, request: HttpRequest, obj: ApiKey | None = None) -> Any:
        if obj is None:
            return ["team", "environment", "name"]
        return ["team", "environment", "name", "prefix", "created_by", "created_at", "last_used_at", "revoked_at"]

    def get_readonly_fields(self, request: HttpRequest, obj: ApiKey | None = None) -> list[str]:
        if obj is None:
            return []
        # A key's team and environment are part of what it is: make a new key instead.
        return ["team", "environment", "prefix", "created_by", "created_at", "last_used_at", "revoked_at"]

    @admin.display(description="status", ordering="revoked_at")
    def status(self, key: ApiKey) -> str:
        return "revoked" if key.revoked_at else "active"

    def save_model(self, request: HttpRequest, obj: ApiKey, form: Any, change: bool) -> None:
        if change:
            super().save_model(request, obj, form, change)
            return
        key, raw = api_key_create(
            team=obj.team,
            environment=obj.environment,
            name=obj.name,
            created_by=request.user,  # type: ignore[arg-type]
        )
        obj.pk = key.pk
        for field in ("prefix", "key_hash", "created_by", "created_at"):
            setattr(obj, field, getattr(key, field))
        messages.warning(request, f"Copy the new key now; it is stored hashed and will not be shown again: {raw}")

    def has_delete_permission(self, request: HttpRequest, obj: ApiKey | None = None) -> bool:
        return False  # revoke instead: traces keep pointing at the key that sent them

    @admin.action(description="Revoke selected keys")
    def revoke_keys(self, request: HttpRequest, queryset: QuerySet[ApiKey]) -> None:
        count = 0
        actor = f"user:{request.user.get_username()}"
        for key in queryset.select_related("team").filter(revoked_at__isnull=True):
            api_key_revoke(key=key, actor=actor)
            count += 1
        self.message_user(request, f"Revoked {count} key(s).", messages.SUCCESS)


@admin.register(AuditEvent)
class AuditEventAdmin(admin.ModelAdmin):
    list_display = ["created_at", "team", "actor", "action", "target"]
    list_filter = ["action", "team"]
    search_fields = ["actor", "action", "target", "team__name"]
    list_select_related = ["team"]
    date_hierarchy = "created_at"

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: AuditEvent | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: AuditEvent | None = None) -> bool:
        return False


@admin.register(UserToken)
class UserTokenAdmin(admin.ModelAdmin):
    """Made by `tracerelay login` / signup only (never here): listed, and revoked in bulk."""

    list_display = ["prefix", "user", "name", "created_at", "expires_at", "last_used_at", "revoked_at"]
    list_filter = [("revoked_at", admin.EmptyFieldListFilter)]
    search_fields = ["user__username", "prefix", "name"]
    readonly_fields = ["user", "name", "prefix", "created_at", "expires_at", "last_used_at", "revoked_at"]
    exclude = ["token_hash"]
    actions = ["revoke_tokens"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: UserToken | None = None) -> bool:
        return False

    @admin.action(description="Revoke selected tokens")
    def revoke_tokens(self, request: HttpRequest, queryset: QuerySet[UserToken]) -> None:
        for token_id in queryset.filter(revoked_at__isnull=True).values_list("id", flat=True):
            user_token_revoke(token_id=token_id)
        messages.success(request, "Revoked. Requests with those tokens are refused from now on.")
