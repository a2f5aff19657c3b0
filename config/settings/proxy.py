"""The OpenAI-compatible proxy (traces/proxy, served by the lean ASGI path in config/asgi.py)."""

from .base import SPECTACULAR_SETTINGS
from .env import DATA_DIR, env

# Built-in upstreams, used when a team has no default of its own. Tests point these at fakes.
TRACERELAY_OPENAI_BASE_URL = env.str("TRACERELAY_OPENAI_BASE_URL", default="https://api.openai.com/v1")
TRACERELAY_ANTHROPIC_BASE_URL = env.str("TRACERELAY_ANTHROPIC_BASE_URL", default="https://api.anthropic.com")

# Upstream timeouts in seconds: connecting (→ 502 when refused, 504 when slow) and the longest
# silence between two reads of the response (→ 504 before the response starts).
TRACERELAY_PROXY_CONNECT_TIMEOUT = env.float("TRACERELAY_PROXY_CONNECT_TIMEOUT", default=10.0)
TRACERELAY_PROXY_READ_TIMEOUT = env.float("TRACERELAY_PROXY_READ_TIMEOUT", default=600.0)
TRACERELAY_PROXY_MAX_CONNECTIONS = env.int("TRACERELAY_PROXY_MAX_CONNECTIONS", default=1000)
TRACERELAY_PROXY_MAX_BODY_BYTES = env.int("TRACERELAY_PROXY_MAX_BODY_BYTES", default=64 * 1024 * 1024)

# In-process caches of API keys and team upstreams (seconds). An entry older than the TTL is still
# served once while it is refreshed in the background; one older than twice the TTL is waited for.
TRACERELAY_PROXY_CACHE_TTL = env.float("TRACERELAY_PROXY_CACHE_TTL", default=10.0)

# Captured request and response bodies larger than this are kept as a truncated preview.
TRACERELAY_PROXY_CAPTURE_MAX_BYTES = env.int("TRACERELAY_PROXY_CAPTURE_MAX_BYTES", default=256 * 1024)

# The background trace writer: batch size, how long a batch may wait to fill, the in-memory queue
# bound (past it, traces go straight to the spool), and where failed batches are spooled.
TRACERELAY_PROXY_WRITER_BATCH = env.int("TRACERELAY_PROXY_WRITER_BATCH", default=500)
TRACERELAY_PROXY_WRITER_INTERVAL = env.float("TRACERELAY_PROXY_WRITER_INTERVAL", default=0.1)
TRACERELAY_PROXY_WRITER_QUEUE_MAX = env.int("TRACERELAY_PROXY_WRITER_QUEUE_MAX", default=100_000)
TRACERELAY_PROXY_SPOOL_DIR = env.str("TRACERELAY_PROXY_SPOOL_DIR", default=str(DATA_DIR / "proxy-spool"))

# sys.setswitchinterval for the web processes (seconds): how long the writer thread may hold the GIL
# while the event loop waits for it (see traces/proxy/app.py).
TRACERELAY_PROXY_SWITCH_INTERVAL = env.float("TRACERELAY_PROXY_SWITCH_INTERVAL", default=0.0005)

# The proxy is served before Django (config/asgi.py): a hook adds its paths to the OpenAPI document.
_hooks = SPECTACULAR_SETTINGS.get("POSTPROCESSING_HOOKS", ["drf_spectacular.hooks.postprocess_schema_enums"])
assert isinstance(_hooks, list)
SPECTACULAR_SETTINGS["POSTPROCESSING_HOOKS"] = [*_hooks, "traces.proxy.openapi.add_proxy_paths"]
