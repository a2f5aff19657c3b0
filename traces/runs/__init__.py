"""Runs: trees of spans (docs/runs.md). `summary` keeps the per-run summary rows (`traces.models.Run`)
at ingest; `selectors` reads runs for the API and the pages; `serializers` shapes them; `api` is the
REST door (`GET /api/v1/runs`, `GET /api/v1/runs/{run_id}`)."""
