"""Signals of the ingest path, for apps above `traces` that keep something in step with stored traces
without `traces` importing them (the layering contract in pyproject.toml)."""

from django.dispatch import Signal

# Sent by `pipeline.services` inside the transaction that inserts new trace rows, with `rows` (the new
# `Trace` instances). A receiver's writes commit or roll back with the traces; a receiver that raises
# fails the ingest (so analytics can never miss a stored trace). Keep receivers to one bulk write.
traces_stored = Signal()
