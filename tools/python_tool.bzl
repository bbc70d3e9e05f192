"""python -m <package> as a Bazel tool, for the Python packages under tools/ and codegen/."""

def python_m_binary(name):
    """The package's __main__.py as py_binary `name`, on its library :<name>_lib.

    Bazel's launcher puts the workspace's runfiles on sys.path, so
    __main__.py imports its package as `python -m` from the repository root
    does.

    Args:
      name: the binary's name; the package's library is :<name>_lib.
    """
    native.py_binary(
        name = name,
        srcs = ["__main__.py"],
        main = "__main__.py",
        python_version = "PY3",
        deps = [":" + name + "_lib"],
    )

def python_tool_library(name, deps = [], data = []):
    """The package's *.py as py_library `name`, on what every model-running tool imports.

    Those are the SDK (//pare), tools/'s shared modules (//tools:tools_pkg),
    codegen (manifests) and the tracer (//tools/tracer:tracer_lib), which
    exports the models the tool runs.

    Args:
      name: the library's name, conventionally <package>_lib.
      deps: the tool's other libraries, after the four above.
      data: files the tool reads at run time.
    """
    native.py_library(
        name = name,
        srcs = native.glob(["*.py"]),
        data = data,
        deps = [
            "//codegen:codegen_lib",
            "//pare",
            "//tools:tools_pkg",
            "//tools/tracer:tracer_lib",
        ] + deps,
    )
