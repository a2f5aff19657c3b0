from django.apps import AppConfig


class ReportsConfig(AppConfig):
    verbose_name = "Reports"
    name = "reports"
    default_auto_field = "django.db.models.BigAutoField"
