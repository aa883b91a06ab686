"""Import ONNX models as PerfDojo kernels (the text form, docs/TextForm.md).

>>> from perfdojo.onnx import import_model
>>> m = import_model("model.onnx", fuse="graph")   # one kernel, fusable
>>> print(m.kernels[0].text)
>>> m.write("out_dir")                              # .pd files, .npy, manifest.json

See docs/ONNX.md for the operator coverage and the conformance results.
"""

from .errors import OnnxImportError
from .importer import (BufferInfo, ImportedModel, Kernel, compiled, import_model,
                       interpreter, run)
from .ops import OPS

__all__ = ["OnnxImportError", "BufferInfo", "ImportedModel", "Kernel", "import_model",
           "run", "interpreter", "compiled", "OPS"]
