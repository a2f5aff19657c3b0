from django.apps import AppConfig

from config import metrics
from traces.signals import traces_stored


class AnalyticsConfig(AppConfig):
    name = "analytics"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Traces are named as pending in the transaction that stores them (docs/analytics.md).
        from .rollups import record_stored  # imports models: only once apps are loaded

        traces_stored.connect(record_stored, dispatch_uid="analytics.rollups")
        # Operators' metrics: traces ingested by path and status (config/metrics.py).
        traces_stored.connect(metrics.traces_stored_receiver, dispatch_uid="config.metrics")
