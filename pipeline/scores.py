"""Writing a score (docs/scores.md): stored, then routed like its trace (delivery.scores)."""

from __future__ import annotations

from django.db import transaction

from delivery.scores import route_scores
from traces.models import Score, Trace
from traces.scores import ScoreInput


def score_create(*, trace: Trace, data: ScoreInput) -> Score:
    """Store the score and, once it is committed, send it to every destination that has its trace.

    Routing runs after the commit: a trace delivered meanwhile then finds the score committed
    (`delivery.scores.follow_delivered` reads scores after its own commit), so one of the two always
    sees the other; the unique (score, destination) row keeps them from sending it twice."""
    with transaction.atomic():
        score = Score.objects.create(
            team_id=trace.team_id,
            trace=trace,
            name=data.name,
            value=data.value,
            number=data.number,
            data_type=data.data_type,
            comment=data.comment,
            source=data.source,
            trace_timestamp=trace.timestamp,
        )
        transaction.on_commit(lambda: route_scores([score.pk]))
    return score
