#!/usr/bin/env python
import os
import sys

if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    from django.core.management import execute_from_command_line
    from django.db.utils import OperationalError

    try:
        execute_from_command_line(sys.argv)
    except OperationalError as exc:
        # With no DATABASE_URL, manage.py uses the embedded Postgres that bin/run starts (config/embedded.py).
        from django.conf import settings

        from config.embedded import DataFolderLock

        if settings.DATABASE_URL or DataFolderLock(settings.DATA_DIR).holder() is not None:
            raise
        sys.exit(
            f"{exc}\nThe embedded Postgres of {settings.DATA_DIR} is not running: start ./bin/run first"
            " (manage.py uses the database it starts), or set DATABASE_URL."
        )
