"""pytest_suite: one pytest suite as a Bazel test (docs/testing.md).

The py_test runs tests/pytest_main.py over the suite (a directory, or a
list of test files and directories) in its runfiles tree: the suite reads
only `data`, and Bazel caches the result until an input changes. Any skip that is not a documented platform limit fails
(PARE_NO_SKIPS, tests/skip_gate.py). tools/run_tests.sh finds these suites by
their tags `pytest_suite:<path>`, one per path, and leaves them to
`bazel test //...`. Each target costs a Python start with torch (about 5 s
of CPU), so a suite groups files rather than being one target per file.
"""

def pytest_suite(
        name,
        suite,
        srcs,
        data = [],
        deps = [],
        runtimes = {},
        platform_dirs = {},
        dirs = {},
        env = {},
        pytest_args = [],
        size = "medium"):
    """A py_test running the pytest suite `suite`.

    Args:
      name: target name.
      suite: the suite's directory, from the repository root ("tests/fuzz"),
        or a list of its test files and directories.
      srcs: the suite's Python files (its tests, conftest and helpers).
      data: the files it reads.
      deps: the Python libraries it imports.
      runtimes: {environment variable: runtime bundle label}: each bundle
        (a selective_runtime) becomes data, and the variable the path of its
        linux_x86_64 library, e.g. {"PARE_RUNTIME_LIB": "//runtime:full"}.
      platform_dirs: {environment variable: pare_platform_files label}: each
        becomes data, and the variable the path of its linux_x86_64 folder,
        e.g. {"PARE_RUNTIME_BITCODE_DIR": "//runtime:bitcode"}.
      dirs: {environment variable: folder in the runfiles tree, from the
        repository root}: the variable its path, e.g. {"PARE_HARNESS_DIR":
        "tools/android_harness/harness/linux_arm64"} (a data dep's output
        folder).
      env: more environment variables for the test (PARE_NO_SKIPS=1 is
        always set), e.g. {"ATEN_CPU_CAPABILITY": "default"}.
      pytest_args: arguments for pytest after the suite's paths, e.g.
        ["-m", "fp_ops"].
      size: the usual.
    """
    paths = [suite] if type(suite) == "string" else suite
    args = list(paths)
    for var, bundle in sorted(runtimes.items()):
        label = Label(bundle)
        args += ["--bundle-env", "%s=%s/%s" % (var, label.package, label.name)]
    for var, files in sorted(platform_dirs.items()):
        label = Label(files)
        args += ["--dir-env", "%s=%s/%s/linux_x86_64" % (var, label.package, label.name)]
    for var, path in sorted(dirs.items()):
        args += ["--dir-env", "%s=%s" % (var, path)]
    args += pytest_args
    test_env = dict(env)
    test_env["PARE_NO_SKIPS"] = "1"
    native.py_test(
        name = name,
        size = size,
        srcs = srcs + ["pytest_main.py"],
        args = args,
        # The host CPU (@pare_host_cpu): a suite's result is its CPU's too,
        # so no cache serves another machine's (docs/testing.md).
        data = data + sorted(runtimes.values()) + sorted(platform_dirs.values()) + ["@pare_host_cpu//:cpu.txt"],
        env = test_env,
        # No __init__.py made in every runfiles folder: the packages have
        # their own, and a made one would sit in the runtime bundles the
        # suites list (tests/verify/test_bundle.py).
        legacy_create_init = False,
        main = "pytest_main.py",
        tags = ["pytest_suite:" + path for path in paths],
        python_version = "PY3",
        deps = [":testlib"] + deps,
    )
