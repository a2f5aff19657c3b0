"""A span's kind (docs/runs.md): its own module, without the ORM, so that normalising and the records
(below the models in the import graph) read the same choices as the model's column."""

from __future__ import annotations

from django.db import models


class Kind(models.TextChoices):
    """What a span of a run is (docs/runs.md). Only ``llm`` and ``embedding`` spans are calls: priced,
    counted in analytics, reports and alerts; the others are the run's structure."""

    LLM = "llm"
    EMBEDDING = "embedding"
    AGENT = "agent"
    TOOL = "tool"
    RETRIEVAL = "retrieval"
    CHAIN = "chain"
    WORKFLOW = "workflow"
    GUARDRAIL = "guardrail"
    EVENT = "event"
    OTHER = "other"


CALL_KINDS = frozenset({Kind.LLM, Kind.EMBEDDING})
