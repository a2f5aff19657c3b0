"""Settings for the test suite: real Postgres and Redis (bin/test makes sure both are up)."""

import os

os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/tracerelay")
os.environ.setdefault("REDIS_URL", "redis://127.0.0.1:6379/0")
os.environ.setdefault("TRACERELAY_DATA_DIR", "/tmp/tracerelay-test-data")

from config.settings import *  # noqa: E402, F403
from config.settings import CACHES  # noqa: E402

# One name per test run (xdist's workers share the run id), so runs side by side on one machine
# never drop each other's database; pytest-django adds the _gwN suffix per worker.
_RUN = os.environ.get("PYTEST_XDIST_TESTRUNUID", str(os.getpid()))[:8]
_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "main")
# xdist workers and parallel runs share one Redis: keep their cache entries apart.
CACHES["default"]["KEY_PREFIX"] = f"tr-test-{_RUN}-{_WORKER}"
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

from config.settings import DATABASES  # noqa: E402

DATABASES["default"]["TEST"] = {"NAME": f"test_tracerelay_{_RUN}"}
