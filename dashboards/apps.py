from django.apps import AppConfig


class DashboardsConfig(AppConfig):
    verbose_name = "Dashboards"
    name = "dashboards"
    default_auto_field = "django.db.models.BigAutoField"
