"""`init`'s options, resolved against the environment and checked once."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

DEFAULT_BASE_URL = "http://127.0.0.1:8000"


@dataclass
class Config:
    api_key: str
    base_url: str = DEFAULT_BASE_URL
    service_name: str | None = None
    environment: str | None = None
    debug: bool = False
    sampling_rate: float = 1.0
    routing_rules: list[dict[str, Any]] | None = None
    batch: bool = False
    batch_size: int = 100
    flush_interval: float = 1.0
    max_queue_size: int = 10_000
    compress: bool = True
    timeout: float = 10.0
    max_retries: int = 5
    shutdown_timeout: float = 2.0
    capture_content: bool = True
    inject_stream_usage: bool = True
    tags: list[str] = field(default_factory=list)

    @classmethod
    def resolve(
        cls,
        *,
        api_key: str | None,
        base_url: str | None,
        routing_rules: Sequence[dict[str, Any]] | None,
        tags: Sequence[str] | None,
        **options: Any,
    ) -> Config:
        key = api_key or os.environ.get("TRACERELAY_API_KEY", "")
        if not key:
            raise ValueError("tracerelay.init needs an API key: pass api_key= or set TRACERELAY_API_KEY")
        url = base_url or os.environ.get("TRACERELAY_BASE_URL") or DEFAULT_BASE_URL
        config = cls(
            api_key=key,
            base_url=url.rstrip("/"),
            routing_rules=[dict(rule) for rule in routing_rules] if routing_rules is not None else None,
            tags=list(tags or ()),
            **{k: v for k, v in options.items() if v is not None},
        )
        config.check()
        return config

    def check(self) -> None:
        if not 0.0 <= float(self.sampling_rate) <= 1.0:
            raise ValueError(f"sampling_rate must be between 0 and 1, not {self.sampling_rate!r}")
        for name in ("batch_size", "max_queue_size"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"{name} must be at least 1")
        for name in ("flush_interval", "timeout", "shutdown_timeout"):
            if float(getattr(self, name)) <= 0:
                raise ValueError(f"{name} must be a positive number of seconds")
        if int(self.max_retries) < 0:
            raise ValueError("max_retries must not be negative")
        self.batch_size = min(int(self.batch_size), 1000)  # the server's batch limit

    def masked_key(self) -> str:
        return mask(self.api_key)


def mask(key: str) -> str:
    """``tr_prod_Ab…`` : enough to tell keys apart in a log, never enough to use one."""
    head = key[: key.rfind("_") + 3] if "_" in key else key[:2]
    return f"{head}…" if len(key) > len(head) else "…"
