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
