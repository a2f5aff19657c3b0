from django.apps import AppConfig


class DiagnosticsConfig(AppConfig):
    name = "diagnostics"
    verbose_name = "Diagnostics (debug mode page, diagnostic bundle)"
    default_auto_field = "django.db.models.BigAutoField"
