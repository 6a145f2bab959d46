"""Argument checks shared by the springskin modules (private).

Arrays are checked by the extension module (springskin._core), which names
the argument and the expected shape in every message; the checks here cover
the other arguments: names, numbers, paths and objects.
"""

import errno
import math
import numbers
import os

from . import _core

# The core's names (ssk_method_name, ssk_backend_name, ssk_bind_method_name).
METHODS = _core.methods
BACKENDS = _core.backends
BIND_METHODS = _core.bind_methods


def _or_list(names):
    names = list(names)
    return ", ".join(names[:-1]) + " or " + names[-1] if len(names) > 1 else names[0]


def choice(value, name, choices):
    """Return the name of `choices` (lowercase strings) that `value` names,
    in any case ("LBS" as Blender's enums spell it, or "lbs").

    Raises TypeError for a non-string, ValueError for an unknown name.
    """
    if not isinstance(value, str):
        raise TypeError(f"{name}: expected a string ({_or_list(choices)}), "
                        f"got {type(value).__name__}")
    if value.lower() not in choices:
        raise ValueError(f"{name}: unknown value {value!r} (expected {_or_list(choices)}; "
                         f"any case)")
    return value.lower()


def real(value, name, *, positive=False, non_negative=False):
    """Return `value` as a finite float (bool is refused)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name}: expected a real number, got {type(value).__name__}")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{name}: expected a finite number, got {value!r}")
    if positive and not value > 0.0:
        raise ValueError(f"{name}: expected a number > 0, got {value!r}")
    if non_negative and not value >= 0.0:
        raise ValueError(f"{name}: expected a number >= 0, got {value!r}")
    return value


def integer(value, name, lo=None, hi=None):
    """Return `value` as an int in [lo, hi] (bool is refused)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name}: expected an integer, got {type(value).__name__}")
    value = int(value)
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        bounds = f"[{lo if lo is not None else '-inf'}, {hi if hi is not None else 'inf'}]"
        raise ValueError(f"{name}: expected an integer in {bounds}, got {value}")
    return value


def path(value, name):
    """Return os.fspath(value) for a str or os.PathLike (not bytes-only
    look-alikes); TypeError otherwise, ValueError for an empty path."""
    if not isinstance(value, (str, os.PathLike)):
        raise TypeError(f"{name}: expected a path (str or os.PathLike), "
                        f"got {type(value).__name__}")
    text = os.fspath(value)
    if isinstance(text, bytes):
        text = os.fsdecode(text)
    if not text:
        raise ValueError(f"{name}: empty path")
    return text


def existing_file(value, name):
    """path() that must name an existing regular file: FileNotFoundError or
    IsADirectoryError otherwise (errno set, filename the path)."""
    text = path(value, name)
    if not os.path.exists(text):
        raise FileNotFoundError(errno.ENOENT, f"{name}: no such file", text)
    if os.path.isdir(text):
        raise IsADirectoryError(errno.EISDIR, f"{name}: a directory, expected a file", text)
    return text


def rig(value, name="rig"):
    """Return `value` when it is a springskin.Rig (the Python wrapper of a
    ``_core.Rig``); TypeError naming `name` otherwise. Checked through the
    wrapped core object, so the modules below ``rig.py`` (binding, graph,
    deformer, bake) need not import it."""
    if not isinstance(getattr(value, "_core", None), _core.Rig):
        raise TypeError(f"{name}: expected a springskin.Rig, got {type(value).__name__}")
    return value


def instance(value, name, cls, what=None):
    """Return `value` when it is a `cls`; TypeError naming `name` otherwise."""
    if not isinstance(value, cls):
        expected = what or f"a springskin.{cls.__name__}"
        raise TypeError(f"{name}: expected {expected}, got {type(value).__name__}")
    return value
