from django.apps import AppConfig

from config import metrics
from traces.signals import traces_stored


class AnalyticsConfig(AppConfig):
    name = "analytics"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Operators' metrics: traces ingested by path and status (config/metrics.py).
        traces_stored.connect(metrics.traces_stored_receiver, dispatch_uid="config.metrics")
