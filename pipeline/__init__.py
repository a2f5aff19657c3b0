"""The ingest pipeline: normalise → price → route → store with the outbox, one transaction.

Its own package, one floor above `delivery` (the layering contract in pyproject.toml): it is the
one place that puts the traces core, routing and the delivery outbox together, so that neither
`traces` nor any door reaches into those floors' internals. The doors (`traces.api`,
`traces.ingest`, `traces.otlp`, the proxy's writer) call `pipeline.services`.
"""
