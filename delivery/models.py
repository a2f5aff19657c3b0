"""The outbox: one Delivery row per trace and destination, and the states it goes through."""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from accounts.models import Team


class DeliveryStatus(models.TextChoices):
    PENDING = "pending"  # waiting to be sent (new, or a retry whose time has not come)
    SENDING = "sending"  # claimed by a worker
    DELIVERED = "delivered"
    FAILED = "failed"  # gave up here; a fallback row carries on
    DEAD = "dead"  # dead letter: replayable
    DROPPED = "dropped"  # not sent, on purpose: `reason` says why (quota, environment); replayable


class DropReason(models.TextChoices):
    QUOTA = "quota"  # over the integration's quota (`config.quota`, over_quota drop or sample)
    ENVIRONMENT = "environment"  # the trace's environment is not among the integration's `config.environments`


class Delivery(models.Model):
    """The outbox: one row per trace and destination, written in the trace's transaction."""

    # No single-column indexes on team and trace: the composite indexes below lead with them, and
    # every index is written on every status change of a hot table.
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="deliveries", db_index=False)
    trace = models.ForeignKey("traces.Trace", on_delete=models.CASCADE, related_name="deliveries", db_index=False)
    destination = models.CharField(max_length=200, help_text="Integration name, or platform for ad-hoc targets.")
    integration = models.ForeignKey(
        "integrations.Integration", null=True, blank=True, on_delete=models.SET_NULL, related_name="deliveries"
    )
    spec = models.JSONField(default=dict, help_text="The destination as routed: tags, url, fallback chain.")
    rule_name = models.CharField(max_length=200, blank=True)
    fallback_of = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="fallbacks", db_index=False
    )
    status = models.CharField(max_length=10, choices=DeliveryStatus.choices, default=DeliveryStatus.PENDING)
    attempts = models.PositiveIntegerField(default=0, help_text="Sends tried since creation or the last replay.")
    next_attempt_at = models.DateTimeField(default=timezone.now)
    # A worker claims a row with a conditional UPDATE (pending → sending) that stamps its own token;
    # it records the outcome only where the token is still its own, so a row the sweeper handed to
    # another worker (claim expired) is never written by two.
    claimed_at = models.DateTimeField(null=True, blank=True)
    claim_token = models.UUIDField(null=True, blank=True)
    # The worker process that made the last claim (`DeliveryWorker`; no foreign key: a claim must not cost
    # a look-up per row). Its lease expiring hands the row to another worker within seconds.
    claimed_by = models.UUIDField(null=True, blank=True)
    # The batch this row was last sent in, stamped when the batch is formed (the claim): a re-send
    # of the row (retry, takeover after a crash, replay) re-forms the same batch, so the same set of
    # traces goes out again and the webhook's delivery id (derived from that set) is the same.
    batch_id = models.UUIDField(null=True, blank=True)
    # When a task for the current pending attempt was last handed to the broker (the sweeper skips
    # rows dispatched within its grace period).
    dispatched_at = models.DateTimeField(null=True, blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    last_status_code = models.PositiveIntegerField(null=True, blank=True)
    # Why a dropped row was not sent (`DropReason`); empty otherwise. A database default: adding the
    # column does not rewrite the table.
    reason = models.CharField(max_length=20, blank=True, default="", db_default="", choices=DropReason.choices)
    replay_count = models.PositiveIntegerField(default=0)
    replayed_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)
    # The backfill that wrote this row (docs/delivery.md, "Backfill"); null for live routing. No
    # constraint (a hot table) and a partial index: live rows stay out of it.
    backfill = models.ForeignKey(
        "Backfill",
        null=True,
        blank=True,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        related_name="deliveries",
        db_index=False,
    )

    class Meta:
        # The table kept its name when the model moved here from `routing` (no rewrite of a hot table).
        db_table = "routing_delivery"
        verbose_name_plural = "deliveries"
        constraints = [
            models.UniqueConstraint(fields=["trace", "destination"], name="delivery_unique_trace_destination")
        ]
        indexes = [
            # Only rows still in flight: delivered/failed/dead rows (nearly all of them) stay out of it.
            models.Index(
                fields=["next_attempt_at"],
                condition=models.Q(status__in=["pending", "sending"]),
                name="delivery_due",
            ),
            # The API lists newest first by id (cursor = last id seen).
            models.Index(fields=["team", "-id"], name="delivery_team_feed"),
            # What people filter by status for: the rows that need attention. Other statuses are found
            # from the feed index; keeping `status` out of most indexes spares every status change.
            models.Index(
                fields=["team", "status", "-id"],
                condition=models.Q(status__in=["failed", "dead"]),
                name="delivery_team_status",
            ),
            models.Index(
                fields=["fallback_of"], condition=models.Q(fallback_of__isnull=False), name="delivery_fallback_of"
            ),
            # A batch's members waiting for a re-send (retry, taken over, replayed), found by batch
            # id. Rows enter it only on those paths: a first send (no batch yet) and a claimed row
            # (sending) stay out, so the hot path never writes it.
            models.Index(
                fields=["batch_id"],
                condition=models.Q(status="pending", batch_id__isnull=False),
                name="delivery_batch_waiting",
            ),
            models.Index(fields=["team", "destination", "-id"], name="delivery_team_destination"),
            # An integration's last 24 h by status (`selectors.recent_delivery_counts`: the integrations
            # page and API), read from the index alone. `created_at` never changes; `status` is here so
            # that the table is not read.
            models.Index(
                fields=["team", "created_at"],
                include=["integration", "destination", "status"],
                name="delivery_team_created",
            ),
            # The queues now (`analytics.live.queue_depth`) and an integration's dead letters counted
            # (`selectors.dead_letters`): rows waiting or dead, read from the index alone; delivered
            # and failed rows (nearly all) stay out of it.
            models.Index(
                fields=["team", "destination", "status", "attempts"],
                include=["integration"],
                condition=models.Q(status__in=["pending", "sending", "dead"]),
                name="delivery_team_waiting",
            ),
            models.Index(
                fields=["backfill", "status"], condition=models.Q(backfill__isnull=False), name="delivery_of_backfill"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.trace_id} → {self.destination} ({self.status})"


class DeliveryWorker(models.Model):
    """A live delivery worker process and its lease on the rows it claimed (`Delivery.claimed_by`).

    The process renews ``heartbeat_at`` every few seconds (`delivery.lease`); once it is older
    than TRACERELAY_DELIVERY_LEASE_S the process is taken for dead and any live worker puts its
    claimed rows back to pending. Times are the database's clock, the same for every host.
    """

    id = models.UUIDField(primary_key=True)
    hostname = models.CharField(max_length=255)
    pid = models.PositiveIntegerField()
    started_at = models.DateTimeField()
    heartbeat_at = models.DateTimeField()

    class Meta:
        db_table = "delivery_worker"

    def __str__(self) -> str:
        return f"{self.hostname}:{self.pid} ({self.id})"


class RunRoute(models.Model):
    """Where a run goes (docs/routing.md, "Runs"): every destination a span of the run was routed to,
    so that the run's structural spans follow, whichever arrives first. ``destinations`` maps a
    destination name → ``{"spec", "rule", "rate", "by"}`` (the routed destination, the rule that
    kept it, its rate, and the trace id of the span that first brought it); the first entry stays.

    Ingest upserts this row for every run it stores spans of in one statement (`delivery.runs`): the
    upsert's row lock, held until the ingest transaction commits, orders concurrent writers of the
    same run, so the later one always sees what the earlier one stored.
    """

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="+", db_index=False)
    run_id = models.CharField(max_length=128)
    destinations = models.JSONField(default=dict)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "delivery_run_route"
        constraints = [models.UniqueConstraint(fields=["team", "run_id"], name="run_route_unique_team_run")]

    def __str__(self) -> str:
        return f"run {self.run_id} → {', '.join(self.destinations) or 'nowhere'}"


class ScoreStatus(models.TextChoices):
    PENDING = "pending"
    SENDING = "sending"
    DELIVERED = "delivered"
    WITHHELD = "withheld"  # score_mappings maps the name to null: never sent there
    DEAD = "dead"  # refused for good, out of attempts, or a destination that takes no scores


class ScoreDelivery(models.Model):
    """A score on its way to one destination that received (or will receive) its trace: the scores'
    outbox (delivery/scores.py). Made when both the score and the trace's delivery there exist."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="+", db_index=False)
    score = models.ForeignKey("traces.Score", on_delete=models.CASCADE, related_name="deliveries", db_index=False)
    delivery = models.ForeignKey(Delivery, on_delete=models.CASCADE, related_name="score_deliveries")
    destination = models.CharField(max_length=200)
    status = models.CharField(max_length=10, choices=ScoreStatus.choices, default=ScoreStatus.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    claim_token = models.UUIDField(null=True, blank=True)
    next_attempt_at = models.DateTimeField(default=timezone.now)
    # The name the destination got (score_mappings); "" while not sent, or withheld.
    sent_name = models.CharField(max_length=200, blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "delivery_score"
        constraints = [
            models.UniqueConstraint(fields=["score", "destination"], name="score_delivery_unique_destination")
        ]
        indexes = [
            models.Index(fields=["next_attempt_at"], condition=models.Q(status="pending"), name="score_delivery_due")
        ]

    def __str__(self) -> str:
        return f"score {self.score_id} → {self.destination} ({self.status})"


class BackfillStatus(models.TextChoices):
    PENDING = "pending"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"


BACKFILL_ACTIVE = (BackfillStatus.PENDING, BackfillStatus.RUNNING)


class Backfill(models.Model):
    """Stored traces sent to one integration after the fact (docs/delivery.md, "Backfill").

    The job walks the traces of [since, until) matching ``filters`` in (timestamp, id) order and
    writes an outbox row (`Delivery.backfill`) for each one the integration has no row for;
    ``cursor`` is the last (timestamp, id) done, so a job taken over by another worker goes on
    where it stopped. ``heartbeat_at``/``claim_token`` are the running task's claim on the job."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="+")
    integration = models.ForeignKey("integrations.Integration", on_delete=models.CASCADE, related_name="backfills")
    since = models.DateTimeField()
    until = models.DateTimeField()
    filters = models.JSONField(default=dict, blank=True, help_text="The feed's filters, as given.")
    apply_rules = models.BooleanField(default=False)
    max_per_second = models.PositiveIntegerField()
    status = models.CharField(max_length=10, choices=BackfillStatus.choices, default=BackfillStatus.PENDING)
    total = models.PositiveIntegerField(default=0)
    sent = models.PositiveIntegerField(default=0)
    skipped = models.PositiveIntegerField(default=0)
    failed = models.PositiveIntegerField(default=0)
    cursor = models.JSONField(null=True, blank=True, help_text="[timestamp, trace pk] of the last trace done.")
    claim_token = models.UUIDField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    created_by = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    error = models.TextField(blank=True)

    class Meta:
        db_table = "delivery_backfill"
        indexes = [
            models.Index(fields=["integration", "-id"], name="backfill_integration"),
            models.Index(
                fields=["heartbeat_at"], condition=models.Q(status__in=["pending", "running"]), name="backfill_active"
            ),
        ]

    def __str__(self) -> str:
        return f"backfill {self.pk} → {self.integration_id} ({self.status})"
