"""Django admin for integrations: secrets are never shown, only which ones are set."""

from __future__ import annotations

from django.contrib import admin

from .models import Integration
from .services import public_config, secrets_set


@admin.register(Integration)
class IntegrationAdmin(admin.ModelAdmin):
    list_display = ("name", "platform", "team", "enabled", "timeout_s", "updated_at")
    list_filter = ("platform", "enabled")
    search_fields = ("name", "team__name")
    exclude = ("secrets", "config")
    readonly_fields = ("masked_config", "secrets_held", "created_at", "updated_at")

    @admin.display(description="config (secrets masked)")
    def masked_config(self, obj: Integration) -> dict[str, object]:
        return public_config(obj) if obj.pk else {}

    @admin.display(description="secrets set")
    def secrets_held(self, obj: Integration) -> str:
        return ", ".join(secrets_set(obj)) if obj.pk else ""
