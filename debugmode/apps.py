from django.apps import AppConfig

from traces.signals import traces_stored


class DebugModeConfig(AppConfig):
    name = "debugmode"
    verbose_name = "Debug mode (per-trace routing and exporter records)"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # The routing explanation is recorded in the transaction that stores the traces.
        from .recording import record_routing  # imports models: only once apps are loaded

        traces_stored.connect(record_routing, dispatch_uid="debugmode.routing")
