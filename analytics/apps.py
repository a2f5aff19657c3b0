from django.apps import AppConfig

from traces.signals import traces_stored


class AnalyticsConfig(AppConfig):
    name = "analytics"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Rollup deltas are written in the transaction that stores the traces (docs/analytics.md).
        from .rollups import record_stored  # imports models: only once apps are loaded

        traces_stored.connect(record_stored, dispatch_uid="analytics.rollups")
