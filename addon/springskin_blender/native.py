"""Lazy import of the compiled ``springskin`` package (the SpringSkin core).

The addon never imports the native module at register time: a missing or
broken build (no module, a module built for another Python, a missing
shared library such as Assimp or EGL) must not stop Blender from loading
the addon, its properties and the node tree of a saved file. The first
call of :func:`springskin` tries, in order:

1. the copy bundled inside the addon (``springskin_blender/springskin/``,
   put there by ``make``: the zip ``build/springskin_blender.zip``);
2. a ``springskin`` importable from Blender's ``sys.path`` (for example
   ``PYTHONPATH=build/python`` with Debian's Blender, which runs the system
   Python 3.11).

The result is cached; when both fail, :func:`error` holds the reasons
(shown in the Spring Skin panel and reported by the operators).
:func:`retry` forgets the cached failure (the panel's "Retry" button, after
installing the missing packages).
"""

import importlib
import sys

__all__ = ["NativeUnavailable", "error", "require", "retry", "springskin"]

_module = None
_error = None
_tried = False


class NativeUnavailable(RuntimeError):
    """The native springskin module cannot be imported; the message says
    why for each place that was tried."""


def _describe(exc):
    text = str(exc).strip() or type(exc).__name__
    return "%s: %s" % (type(exc).__name__, text)


def springskin():
    """The ``springskin`` module, or None when it cannot be imported (see
    :func:`error`). Imported once; later calls return the cached result."""
    global _module, _error, _tried
    if _tried:
        return _module
    _tried = True
    reasons = []
    package = __package__ or "springskin_blender"
    try:
        _module = importlib.import_module(package + ".springskin")
        return _module
    except Exception as exc:  # ImportError, OSError from dlopen, anything at import
        reasons.append("bundled copy (%s.springskin): %s" % (package, _describe(exc)))
    try:
        _module = importlib.import_module("springskin")
        return _module
    except Exception as exc:
        reasons.append("system 'springskin' on sys.path: %s" % _describe(exc))
    _module = None
    _error = ("The SpringSkin native module could not be imported into Blender's Python "
              "%d.%d (%s). Tried: %s. Install the addon from build/springskin_blender.zip "
              "made by `make` for this Python, or start Blender with "
              "PYTHONPATH=<build>/python." % (sys.version_info[0], sys.version_info[1],
                                               sys.executable, "; ".join(reasons)))
    return None


def error():
    """Why the module is unavailable (str), or None when it imported or was
    not tried yet."""
    return _error


def require():
    """The ``springskin`` module; raises :class:`NativeUnavailable` with the
    reasons when it cannot be imported."""
    module = springskin()
    if module is None:
        raise NativeUnavailable(_error)
    return module


def retry():
    """Forget a failed import so that the next :func:`springskin` tries again
    (Python drops a module whose import raised, so nothing stale remains)."""
    global _error, _tried
    if _module is None:
        _tried = False
        _error = None
