"""The proxy's settings, read once from Django settings into a plain object the hot path can use."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from django.conf import settings


@dataclass(slots=True)
class ProxySettings:
    openai_base_url: str
    anthropic_base_url: str
    connect_timeout: float
    read_timeout: float
    max_connections: int
    max_body_bytes: int
    cache_ttl: float
    capture_max_bytes: int
    writer_batch: int
    writer_interval: float
    writer_queue_max: int
    spool_dir: Path
    max_tags: int
    max_metadata_keys: int
    switch_interval: float

    @classmethod
    def from_django(cls) -> ProxySettings:
        return cls(
            openai_base_url=settings.TRACERELAY_OPENAI_BASE_URL,
            anthropic_base_url=settings.TRACERELAY_ANTHROPIC_BASE_URL,
            connect_timeout=settings.TRACERELAY_PROXY_CONNECT_TIMEOUT,
            read_timeout=settings.TRACERELAY_PROXY_READ_TIMEOUT,
            max_connections=settings.TRACERELAY_PROXY_MAX_CONNECTIONS,
            max_body_bytes=settings.TRACERELAY_PROXY_MAX_BODY_BYTES,
            cache_ttl=settings.TRACERELAY_PROXY_CACHE_TTL,
            capture_max_bytes=settings.TRACERELAY_PROXY_CAPTURE_MAX_BYTES,
            writer_batch=settings.TRACERELAY_PROXY_WRITER_BATCH,
            writer_interval=settings.TRACERELAY_PROXY_WRITER_INTERVAL,
            writer_queue_max=settings.TRACERELAY_PROXY_WRITER_QUEUE_MAX,
            spool_dir=Path(settings.TRACERELAY_PROXY_SPOOL_DIR),
            max_tags=settings.TRACE_MAX_TAGS,
            max_metadata_keys=settings.TRACE_MAX_METADATA_KEYS,
            switch_interval=settings.TRACERELAY_PROXY_SWITCH_INTERVAL,
        )
