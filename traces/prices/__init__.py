"""A team's own prices (docs/pricing.md, "Team prices"): per-million-token USD prices for a model
(exact name or ``prefix*``), consulted before genai-prices by `traces.pricing.price`."""
