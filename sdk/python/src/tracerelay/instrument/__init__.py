"""Auto-instrumentation: patch the provider libraries already imported, and the ones imported later.

A library imported before `init` has its classes patched at once (every client, old or new, looks its
methods up on the class). For one imported after `init`, a finder on `sys.meta_path` lets the normal
import run and patches the classes as soon as the package's module has executed.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import logging
import sys
import threading
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

from . import anthropic, google_genai, mistral, openai

log = logging.getLogger("tracerelay")

# The module whose import means "the library is here" → its installer.
LIBRARIES: dict[str, tuple[Callable[[], list[str]], Callable[[], None]]] = {
    "openai": (openai.install, openai.uninstall),
    "anthropic": (anthropic.install, anthropic.uninstall),
    "mistralai.client": (mistral.install, mistral.uninstall),
    "google.genai.models": (google_genai.install, google_genai.uninstall),
}

_lock = threading.RLock()
_installed: dict[str, list[str]] = {}


def _install(name: str) -> None:
    with _lock:
        if name in _installed:
            return
        try:
            _installed[name] = LIBRARIES[name][0]()
            log.debug("tracerelay: instrumented %s: %s", name, ", ".join(_installed[name]) or "nothing found")
        except Exception:  # a library version we do not know: its calls go untraced, the app is unaffected
            _installed[name] = []
            log.warning("tracerelay: could not instrument %s", name, exc_info=True)


class _Finder(importlib.abc.MetaPathFinder):
    """Finds nothing itself: wraps the real loader of a watched module so it is patched once executed."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in LIBRARIES or fullname in _installed:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                break
        else:
            return None
        loader: Any = spec.loader
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        exec_module = loader.exec_module

        def exec_and_patch(module: ModuleType) -> None:
            exec_module(module)
            _install(fullname)

        try:
            loader.exec_module = exec_and_patch  # this loader instance serves this one module
        except (AttributeError, TypeError):
            return spec
        return spec


_finder = _Finder()


def install() -> None:
    """Patch what is imported; watch for the rest. Idempotent."""
    if _finder not in sys.meta_path:
        sys.meta_path.insert(0, _finder)
    for name in LIBRARIES:
        if name in sys.modules:
            _install(name)


def uninstall() -> None:
    """Restore the original methods (tests; `tracerelay.shutdown` leaves them, they pass through)."""
    with _lock:
        if _finder in sys.meta_path:
            sys.meta_path.remove(_finder)
        for name in list(_installed):
            try:
                LIBRARIES[name][1]()
            except Exception:
                log.debug("tracerelay: could not restore %s", name, exc_info=True)
            del _installed[name]


def installed() -> dict[str, list[str]]:
    return {name: list(methods) for name, methods in _installed.items()}
