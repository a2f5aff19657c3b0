import os
from enum import StrEnum

from celery import Celery


class Queue(StrEnum):
    """Every Celery queue, named in one place. Workers pick theirs with ``-Q``."""

    INGEST = "ingest"
    DELIVERY = "delivery"
    REPORTS = "reports"


os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("tracerelay")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
