from django.contrib import admin

from .models import Retention


@admin.register(Retention)
class RetentionAdmin(admin.ModelAdmin):
    list_display = ("team", "trace_days", "rollup_days")
    search_fields = ("team__name",)
    autocomplete_fields = ("team",)
