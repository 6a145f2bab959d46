"""Deformer graphs (Toothman 2020, 6.1): the JSON document of
``docs/deformer-graph.md``, shared with the command line and the Blender
addon."""

import json
import os

import numpy as np

from . import _checks
from . import _core

__all__ = ["Graph"]


def _json_default(value):
    """numpy scalars and arrays in a graph dict become JSON numbers/lists."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"graph: a value of type {type(value).__name__} is not JSON "
                    f"(expected dict, list, str, number, bool or None)")


class Graph:
    """A deformer graph, validated against a rig.

    Nodes (skinning with a method, radial, spring, arap, implicit,
    normals, output, and a cage that reshapes the rig the others run on)
    and edges, as the JSON document of ``docs/deformer-graph.md``; bone names
    and vertex rows refer to the rig, so a graph is parsed against one.

    Parameters
    ----------
    source : dict or str or os.PathLike or Graph
        The document as a dict (serialized with ``json.dumps``; numpy
        scalars and arrays are accepted as numbers and lists), or the path
        of a JSON file, or a Graph (re-validated against `rig` when it was
        parsed against another rig).
    rig : Rig
        The rig whose bone names and vertex rows the graph uses.

    Raises
    ------
    ValueError
        An invalid document (``status`` ``"SSK_ERROR_GRAPH"``): the message
        gives the JSON position, or the node, edge and field at fault, e.g.
        ``graph: node 'r': field 'bones': unknown bone 'B_Spine9'``.
    FileNotFoundError, OSError
        The file cannot be read.
    TypeError
        `source` of another type, or a dict holding values that are not
        JSON.

    Examples
    --------
    >>> graph = springskin.Graph({
    ...     "version": 1,
    ...     "nodes": [{"id": "skin", "type": "skinning", "method": "irs"},
    ...               {"id": "out", "type": "output"}],
    ...     "edges": [{"from": "skin", "to": "out"}]}, rig)
    """

    def __init__(self, source, rig):
        _checks.rig(rig)
        self._rig = rig
        if isinstance(source, Graph):
            if source._rig is rig:
                core = source._core
            else:
                core = _core.graph_parse(source.to_json(), rig._core)
        elif isinstance(source, dict):
            try:
                text = json.dumps(source, allow_nan=False, default=_json_default)
            except ValueError as exc:
                raise ValueError(f"graph: {exc} (NaN and infinity are not JSON)") from None
            core = _core.graph_parse(text, rig._core)
        elif isinstance(source, (str, os.PathLike)):
            core = _core.graph_load(_checks.existing_file(source, "graph"), rig._core)
        else:
            raise TypeError(f"graph: expected a dict, a path or a springskin.Graph, "
                            f"got {type(source).__name__}")
        self._core = core

    @classmethod
    def from_json(cls, text, rig):
        """Parse a JSON document given as a string.

        Raises
        ------
        ValueError
            As :class:`Graph`.
        """
        _checks.rig(rig)
        if not isinstance(text, str):
            raise TypeError(f"text: expected a str, got {type(text).__name__}")
        graph = cls.__new__(cls)
        graph._rig = rig
        graph._core = _core.graph_parse(text, rig._core)
        return graph

    @classmethod
    def from_method(cls, method, rig):
        """The one-node graph of a method, as ``--method`` (``spring``: rigid
        skinning then a spring node with the defaults).

        Parameters
        ----------
        method : str
            One of :data:`springskin.METHODS`.
        rig : Rig
        """
        _checks.rig(rig)
        method = _checks.choice(method, "method", _checks.METHODS)
        graph = cls.__new__(cls)
        graph._rig = rig
        graph._core = _core.graph_from_method(method, rig._core)
        return graph

    @property
    def rig(self):
        """Rig: the rig the graph was validated against."""
        return self._rig

    @property
    def needs_binding(self):
        """bool: a node needs a binding (rigid, irs, radial and spring
        nodes; ``ssk_graph_needs_binding``)."""
        return self._core.needs_binding

    def to_json(self):
        """The canonical JSON text (every default written out; parses to an
        equal graph)."""
        return self._core.to_json()

    def to_dict(self):
        """The canonical document as a dict."""
        return json.loads(self.to_json())

    def _for_rig(self, rig):
        """The core graph validated against `rig` (self's when same rig)."""
        if rig is self._rig:
            return self._core
        return _core.graph_parse(self.to_json(), rig._core)

    def __repr__(self):
        doc = self.to_dict()
        types = ", ".join(f"{n['id']}:{n['type']}" for n in doc["nodes"])
        return f"<springskin.Graph [{types}]>"
