"""Celery: Redis (REDIS_URL) or the embedded Valkey as the broker."""

from config import embedded

from .base import REDIS_URL
from .env import DATA_DIR, env

# kombu names a Unix socket redis+socket://, redis-py unix://: the embedded Valkey is both.
_default_broker = embedded.broker_url(DATA_DIR) if REDIS_URL == embedded.redis_url(DATA_DIR) else REDIS_URL
CELERY_BROKER_URL = env.str("CELERY_BROKER_URL", default=_default_broker)
CELERY_BROKER_TRANSPORT_OPTIONS: dict[str, object] = {"visibility_timeout": 3600}

# The level of Celery's line per task (received, succeeded, sent by beat): INFO to see every task.
TRACERELAY_TASK_LOG_LEVEL = env.str("TRACERELAY_TASK_LOG_LEVEL", default="WARNING").upper()
CELERY_TASK_IGNORE_RESULT = True
CELERY_RESULT_BACKEND = None
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 4
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TIMEZONE = "UTC"
CELERY_BEAT_SCHEDULER = "django_celery_beat.schedulers:DatabaseScheduler"
CELERY_TASK_DEFAULT_QUEUE = "delivery"
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Publishing must not hang a request when the broker is down: the outbox sweeper covers the gap.
CELERY_BROKER_CONNECTION_TIMEOUT = 2
CELERY_TASK_PUBLISH_RETRY = False

# Delivery (the delivery app): outbox sweeper, claim visibility timeout, circuit breaker.
TRACERELAY_OUTBOX_SWEEP_INTERVAL_S = env.float("TRACERELAY_OUTBOX_SWEEP_INTERVAL_S", default=30.0)
TRACERELAY_OUTBOX_SWEEP_GRACE_S = env.float("TRACERELAY_OUTBOX_SWEEP_GRACE_S", default=30.0)
# Delivery ids per published task: big enough to batch per destination, small enough to spread over workers.
TRACERELAY_DELIVERY_TASK_CHUNK = env.int("TRACERELAY_DELIVERY_TASK_CHUNK", default=400)
TRACERELAY_DELIVERY_CLAIM_TIMEOUT_S = env.float("TRACERELAY_DELIVERY_CLAIM_TIMEOUT_S", default=300.0)
# A worker process's lease on the rows it claimed (delivery.lease; docs/delivery.md): renewed every
# heartbeat while the process lives, and taken over by any live worker once it is this old.
TRACERELAY_DELIVERY_LEASE_S = env.float("TRACERELAY_DELIVERY_LEASE_S", default=20.0)
TRACERELAY_DELIVERY_HEARTBEAT_S = env.float("TRACERELAY_DELIVERY_HEARTBEAT_S", default=5.0)
TRACERELAY_BREAKER_FAILURES = env.int("TRACERELAY_BREAKER_FAILURES", default=5)
TRACERELAY_BREAKER_COOLDOWN_S = env.float("TRACERELAY_BREAKER_COOLDOWN_S", default=30.0)
# Backfill (delivery.backfill; docs/delivery.md, Backfill): it writes more outbox rows only while the
# destination has at most this many waiting or being sent; a running job whose heartbeat is older
# than the stale time is taken over by the sweep (every sweep interval).
TRACERELAY_BACKFILL_MAX_BACKLOG = env.int("TRACERELAY_BACKFILL_MAX_BACKLOG", default=1000)
TRACERELAY_BACKFILL_STALE_S = env.float("TRACERELAY_BACKFILL_STALE_S", default=60.0)
# A backfill task runs its job this long, then hands it to a fresh task (so it never holds a worker thread long).
TRACERELAY_BACKFILL_SLICE_S = env.float("TRACERELAY_BACKFILL_SLICE_S", default=20.0)
TRACERELAY_BACKFILL_SWEEP_INTERVAL_S = env.float("TRACERELAY_BACKFILL_SWEEP_INTERVAL_S", default=30.0)

# Analytics (analytics.rollups, analytics.retention; docs/analytics.md).
TRACERELAY_ANALYTICS_FOLD_INTERVAL_S = env.float("TRACERELAY_ANALYTICS_FOLD_INTERVAL_S", default=10.0)
TRACERELAY_ANALYTICS_RAW_SCAN_MAX = env.int("TRACERELAY_ANALYTICS_RAW_SCAN_MAX", default=100_000)
TRACERELAY_RETENTION_TRACE_DAYS = env.int("TRACERELAY_RETENTION_TRACE_DAYS", default=30)
TRACERELAY_RETENTION_ROLLUP_DAYS = env.int("TRACERELAY_RETENTION_ROLLUP_DAYS", default=400)
TRACERELAY_RETENTION_MINUTE_HOURS = env.int("TRACERELAY_RETENTION_MINUTE_HOURS", default=48)

# Reports (reports.tasks; docs/reports.md): a failed run is tried this many times in all, waiting
# TRACERELAY_REPORT_RETRY_DELAY_S, then twice that, between tries.
TRACERELAY_REPORT_ATTEMPTS = env.int("TRACERELAY_REPORT_ATTEMPTS", default=3)
TRACERELAY_REPORT_RETRY_DELAY_S = env.float("TRACERELAY_REPORT_RETRY_DELAY_S", default=60.0)

# Spend alerts (alerts.evaluation; docs/alerts.md): how often beat evaluates every alert. A crossing
# is seen within this interval plus the evaluation's time (well under the 60 s promised).
TRACERELAY_ALERT_EVALUATE_INTERVAL_S = env.float("TRACERELAY_ALERT_EVALUATE_INTERVAL_S", default=20.0)

# Re-pricing jobs (repricing; docs/pricing.md, Re-pricing): traces per chunk (one transaction each),
# how long a job's claim may go unrenewed before another worker takes the job over (a chunk renews it;
# one takes well under a second), and how often beat looks for such jobs.
TRACERELAY_REPRICE_CHUNK = env.int("TRACERELAY_REPRICE_CHUNK", default=500)
TRACERELAY_REPRICE_STALE_S = env.float("TRACERELAY_REPRICE_STALE_S", default=120.0)
TRACERELAY_REPRICE_SWEEP_INTERVAL_S = env.float("TRACERELAY_REPRICE_SWEEP_INTERVAL_S", default=60.0)

# Debug mode (debugmode; docs/deployment.md, Debug mode and the diagnostic bundle).
TRACERELAY_DEBUG_RETENTION_HOURS = env.float("TRACERELAY_DEBUG_RETENTION_HOURS", default=24.0)
