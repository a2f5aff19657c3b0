from django.contrib import admin

from .models import PiiPolicy


@admin.register(PiiPolicy)
class PiiPolicyAdmin(admin.ModelAdmin):
    list_display = ("team", "stored_mode", "version", "updated_at", "updated_by")
    list_filter = ("stored_mode",)
    search_fields = ("team__name",)
    # Edited through the API or the settings page, which validate patterns and destinations and
    # publish the change; the admin shows what is stored.
    readonly_fields = (
        "team",
        "stored_mode",
        "destinations",
        "kinds",
        "custom_patterns",
        "version",
        "updated_at",
        "updated_by",
    )

    def has_add_permission(self, request: object) -> bool:
        return False
