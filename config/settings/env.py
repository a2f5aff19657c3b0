"""The one place that reads the environment (django-environ), shared by the settings modules."""

from pathlib import Path

import environ

BASE_DIR = Path(__file__).resolve().parent.parent.parent

env = environ.Env()
environ.Env.read_env(BASE_DIR / ".env", overwrite=False)

# Where the embedded default keeps its SQLite database and Celery's filesystem queue.
DATA_DIR = Path(env.str("TRACERELAY_DATA_DIR", default=str(BASE_DIR / "data")))
