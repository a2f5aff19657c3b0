"""Settings: one base module plus small modules per concern, all read from the environment."""

from .base import *  # noqa: F403
from .celery import *  # noqa: F403
from .proxy import *  # noqa: F403
from .security import *  # noqa: F403
