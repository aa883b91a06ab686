"""The importer's error type."""

from __future__ import annotations

from typing import Optional


class OnnxImportError(Exception):
    """An ONNX node (or model) that the text form cannot express.

    ``op_type``, ``node_name`` and ``node_index`` identify the node (``None``
    for model-level problems); ``reason`` says why.  ``str(e)`` names both.
    """

    def __init__(self, reason: str, op_type: Optional[str] = None,
                 node_name: Optional[str] = None,
                 node_index: Optional[int] = None):
        self.reason = reason
        self.op_type = op_type
        self.node_name = node_name
        self.node_index = node_index
        if op_type is None:
            msg = reason
        else:
            label = f"'{node_name}'" if node_name else "(unnamed)"
            msg = f"node #{node_index} {label} ({op_type}): {reason}"
        super().__init__(msg)
