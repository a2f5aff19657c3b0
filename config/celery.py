import logging
import os
from enum import StrEnum

from celery import Celery, signals


class Queue(StrEnum):
    """Every Celery queue, named in one place. Workers pick theirs with ``-Q``."""

    INGEST = "ingest"
    DELIVERY = "delivery"
    REPORTS = "reports"
    BACKFILL = "backfill"  # low priority: its own worker, so live delivery never waits behind it


os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("tracerelay")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

# Celery's line per task received, done and sent by beat (several every 10 s from the schedules alone),
# at TRACERELAY_TASK_LOG_LEVEL: WARNING by default keeps failures and retries' errors, and lets
# bin/run's first screen stay on the screen.
TASK_LOGGERS = ("celery.app.trace", "celery.worker.strategy", "celery.beat")


@signals.after_setup_logger.connect
def _task_log_level(**_: object) -> None:
    from django.conf import settings

    for name in TASK_LOGGERS:
        logging.getLogger(name).setLevel(settings.TRACERELAY_TASK_LOG_LEVEL)


def ensure_interval_task(*, name: str, task: str, every: int, queue: Queue) -> None:
    """Write (or update) a django-celery-beat periodic task that runs `task` every `every` seconds.

    Called when beat starts, so a schedule exists whatever the database's history (a fresh install,
    a flushed test database) and follows its setting.
    """
    # Imported here: this module is loaded before Django's apps, and workers never need the beat models.
    from django_celery_beat.models import IntervalSchedule, PeriodicTask

    interval = IntervalSchedule.objects.filter(every=every, period=IntervalSchedule.SECONDS).order_by("pk").first()
    if interval is None:  # (the admin may have made duplicates: get_or_create would then fail)
        interval = IntervalSchedule.objects.create(every=every, period=IntervalSchedule.SECONDS)
    PeriodicTask.objects.update_or_create(
        name=name,
        defaults={
            "task": task,
            "interval": interval,
            "queue": str(queue),
            "expire_seconds": every,  # a late run is useless: the next one is coming
            "enabled": True,
        },
    )
