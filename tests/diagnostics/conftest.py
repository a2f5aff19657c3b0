from ..dashboard.conftest import admin, as_role, login, viewer  # noqa: F401
from ..debugmode.conftest import _fresh_state, debug_on, published  # noqa: F401
