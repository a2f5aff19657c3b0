"""Writes of the traces core that are not ingest (ingest is `pipeline.services.traces_ingest`): the
feed columns a person chose."""

from __future__ import annotations

from collections.abc import Iterable

from django.contrib.auth.models import AbstractBaseUser

from .models import FeedColumn, FeedColumns


class UnknownColumn(ValueError):
    pass


def feed_columns_save(*, user: AbstractBaseUser, columns: Iterable[str]) -> list[str]:
    """Keep ``columns`` (FeedColumn values) as the person's feed columns; the stored list is in the
    feed's order. An unknown column stores nothing and raises UnknownColumn naming it."""
    chosen = set(columns)
    unknown = sorted(chosen - set(FeedColumn.values))
    if unknown:
        raise UnknownColumn(f"Not a feed column: {', '.join(unknown)}. Choose from {', '.join(FeedColumn.values)}.")
    ordered = [c.value for c in FeedColumn if c.value in chosen]
    FeedColumns.objects.update_or_create(user_id=user.pk, defaults={"columns": ordered})
    return ordered
