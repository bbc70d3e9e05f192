"""Pare Python SDK.

* :mod:`pare.program` builds (and reads back) program files in the Pare
  program format (docs/program_format.md); the tracer's exporter emits
  models through it.
* :mod:`pare.runtime` loads a Pare runtime shared library with ctypes and
  runs programs on numpy arrays, reads the build's inventory and the
  instrumentation build's trace.
* :mod:`pare.dtypes` maps PyTorch ScalarType codes and names to numpy.

Only numpy is required; torch is optional (torch tensors and dtypes are
accepted where noted).
"""

__all__ = ["dtypes", "program", "runtime"]
