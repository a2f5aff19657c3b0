"""Backfill: stored traces sent to an integration after the fact (docs/delivery.md, "Backfill")."""
