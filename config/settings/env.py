"""The one place that reads the environment (django-environ), shared by the settings modules."""

from pathlib import Path

import environ

BASE_DIR = Path(__file__).resolve().parent.parent.parent

env = environ.Env()
environ.Env.read_env(BASE_DIR / ".env", overwrite=False)

# Where the embedded default keeps its SQLite database and Celery's filesystem queue.
DATA_DIR = Path(env.str("TRACERELAY_DATA_DIR", default=str(BASE_DIR / "data")))


def data_secret_key() -> str:
    """The embedded default's SECRET_KEY: made once per data folder, kept in it (mode 600).

    Production sets SECRET_KEY. The key also derives the Fernet key for integration secrets when
    TRACERELAY_FERNET_KEYS is unset, so it must stay the same across restarts: hence the file.
    """
    import os
    import secrets

    DATA_DIR.mkdir(parents=True, exist_ok=True)
    path = DATA_DIR / "secret_key"
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        for _ in range(50):  # another process is writing it right now
            value = path.read_text().strip()
            if value:
                return value
            import time

            time.sleep(0.02)
        raise RuntimeError(f"{path} is empty: delete it or set SECRET_KEY")
    value = secrets.token_urlsafe(50)
    with os.fdopen(fd, "w") as handle:
        handle.write(value)
    return value
