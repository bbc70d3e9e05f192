"""Repository rules that find the host's LLVM and Python, so no checked-in file
names a machine-specific path.

`pare_llvm_repository` locates clang-16 (or `$PARE_LLVM_ROOT`), writes
wrapper scripts for the tools the toolchains use, records the include
directories clang reports, and instantiates every C++ toolchain of
//platforms:table.bzl inside the generated repository, so tool paths are
relative to it.

`pare_python_repository` registers a Python toolchain on the interpreter that
has the project's dependencies: `$PARE_PYTHON`, else `<workspace>/.venv`,
else `python3` on PATH. Bazel actions get no PATH, so py_binary tools need
this to run at all. Actions run it through a wrapper whose text names no
checkout path, so their remote-cache keys are the same in every checkout
(docs/remote_cache.md).
"""

load("//platforms:table.bzl", "PLATFORMS")

_LLVM_TOOLS = [
    "clang",
    "clang++",
    "ld.lld",
    "ld64.lld",
    "llvm-ar",
    "llvm-ifs",
    "llvm-link",
    "llvm-nm",
    "llvm-objcopy",
    "llvm-objdump",
    "llvm-strip",
    "llvm-cov",
    "llvm-cxxfilt",
    "llvm-dwp",
    "opt",
]

_LLVM_VERSION = "16"

def _fail(msg):
    fail("pare: " + msg)

def _find_llvm_root(rctx):
    root = rctx.os.environ.get("PARE_LLVM_ROOT", "")
    if root:
        if not rctx.path(root + "/bin/clang").exists:
            _fail("PARE_LLVM_ROOT=%s has no bin/clang; point it at an LLVM %s install (for example /usr/lib/llvm-%s)" % (root, _LLVM_VERSION, _LLVM_VERSION))
        return root
    clang = rctx.which("clang-" + _LLVM_VERSION)
    if clang == None:
        _fail("clang-%s not found on PATH; run tools/setup.sh (apt: clang-%s lld-%s llvm-%s) or set PARE_LLVM_ROOT" % (_LLVM_VERSION, _LLVM_VERSION, _LLVM_VERSION, _LLVM_VERSION))
    result = rctx.execute([clang, "-print-resource-dir"])
    if result.return_code != 0:
        _fail("%s -print-resource-dir failed: %s" % (clang, result.stderr))

    # <root>/lib/clang/<ver> -> <root>
    return str(rctx.path(result.stdout.strip()).dirname.dirname.dirname)

def _include_dirs(rctx, clang, triple, extra_flags):
    """The <...> search list clang reports for a target, in both spellings."""
    result = rctx.execute([clang, "--target=" + triple] + extra_flags + ["-E", "-x", "c++", "-", "-v"])
    dirs = []
    in_list = False
    for line in result.stderr.splitlines():
        if line.startswith("#include <...> search starts here"):
            in_list = True
            continue
        if line.startswith("End of search list"):
            break
        if in_list:
            d = line.strip()
            if not rctx.path(d).exists:
                continue

            # Bazel wants normalized paths: keep clang's spelling when it is
            # one, and always the canonical one.
            if "/../" not in d and "/./" not in d:
                dirs.append(d)
            real = str(rctx.path(d).realpath)
            if real not in dirs:
                dirs.append(real)
    return dirs

def _own_label(label):
    """A label of Pare's as text that resolves from another repository.

    In the main repository when Pare is the main repository, in @pare (or
    whatever name the user gave it) when it is an external one.
    """
    resolved = Label(label)
    return "@%s//%s:%s" % (resolved.workspace_name, resolved.package, resolved.name)

def _pare_llvm_repository_impl(rctx):
    root = _find_llvm_root(rctx)
    for tool in _LLVM_TOOLS:
        target = root + "/bin/" + tool
        if not rctx.path(target).exists:
            _fail("%s is missing; install lld-%s and llvm-%s (tools/setup.sh does)" % (target, _LLVM_VERSION, _LLVM_VERSION))

        # A script, not a symlink: clang finds its resource directory from
        # its own real path.
        rctx.file("bin/" + tool, "#!/bin/sh\nexec %s \"$@\"\n" % target, executable = True)

    clang = root + "/bin/clang"
    resource_dir = rctx.execute([clang, "-print-resource-dir"]).stdout.strip()
    include_dirs = {}
    for row in PLATFORMS:
        # Android and iOS compile without a sysroot (-nostdlibinc); the API
        # level does not change the search list.
        flags = [] if row.flavor == "linux" else ["-nostdlibinc"]
        include_dirs[row.name] = _include_dirs(rctx, clang, row.triple, flags) + [resource_dir + "/include"]

    # Bazel's layering_check needs a module map of the toolchain's own
    # headers ("crosstool"): a header found under these directories is a
    # system header, which any target may include; any other must come from
    # a direct dep (toolchains.bzl). Umbrella directories, not a list of
    # files: the map is an input of every compile, and a list would tie the
    # actions' cache keys to which -dev packages this machine has.
    for row in PLATFORMS:
        dirs = {d: None for d in include_dirs[row.name]}.keys()
        rctx.file(row.name + ".modulemap", "\n".join(
            ['module "crosstool" [system] {'] +
            ['  module "dir%d" {\n    umbrella "%s"\n  }' % (i, d) for i, d in enumerate(dirs)] +
            ["}", ""],
        ))

    rctx.file("config.bzl", "\n".join([
        '"""Generated by @pare//toolchains:repositories.bzl. Do not edit."""',
        "LLVM_ROOT = %r" % root,
        "RESOURCE_DIR = %r" % resource_dir,
        "INCLUDE_DIRS = %r" % include_dirs,
        "",
    ]))
    rctx.file("BUILD.bazel", "\n".join([
        "# Generated by @pare//toolchains:repositories.bzl. Do not edit.",
        'load("%s", "pare_cc_toolchains")' % _own_label("//toolchains:toolchains.bzl"),
        'load(":config.bzl", "INCLUDE_DIRS")',
        'package(default_visibility = ["//visibility:public"])',
        "exports_files(glob([\"bin/*\", \"*.modulemap\"]))",
        'filegroup(name = "tools", srcs = glob(["bin/*"]))',
        "pare_cc_toolchains(include_dirs = INCLUDE_DIRS)",
        "",
    ]))

pare_llvm_repository = repository_rule(
    implementation = _pare_llvm_repository_impl,
    environ = ["PARE_LLVM_ROOT", "PATH"],
    local = True,
    doc = "Wraps the host's LLVM 16 and defines Pare's C++ toolchains on it.",
)

# Prints what the Python toolchain needs to know of an interpreter: the base
# interpreter (outside any venv) for the launcher stub's shebang, and the
# version and installed distributions, which go into the wrapper's text so
# that cache keys change when they do.
_DESCRIBE_PYTHON = """
import hashlib, platform, sys
from importlib import metadata
dists = sorted("%s==%s" % (d.metadata["Name"], d.version) for d in metadata.distributions())
print(getattr(sys, "_base_executable", "") or sys.executable)
print(platform.python_implementation(), platform.python_version())
print(hashlib.sha256("\\n".join(dists).encode()).hexdigest())
"""

def _pare_python_repository_impl(rctx):
    python = rctx.os.environ.get("PARE_PYTHON", "")
    if not python:
        venv = rctx.path(Label("@//:WORKSPACE")).dirname.get_child(".venv").get_child("bin").get_child("python3")
        if venv.exists:
            python = str(venv)
    if not python:
        found = rctx.which("python3")
        if found == None:
            _fail("no Python interpreter: run tools/setup.sh (it creates .venv) or set PARE_PYTHON")
        python = str(found)
    result = rctx.execute([python, "-c", _DESCRIBE_PYTHON])
    if result.return_code != 0:
        _fail("%s does not run (%s); rerun tools/setup.sh or point PARE_PYTHON at a Python 3.8+ interpreter" % (python, result.stderr.strip()))
    base_python, version, packages = result.stdout.strip().splitlines()

    # The interpreter py_binary actions run is this wrapper, an input of each
    # of them: it must not name the checkout (.bazelrc.local's PARE_PYTHON is
    # <checkout>/.venv/bin/python3), or no two checkouts share a remote-cache
    # entry (docs/remote_cache.md). It reaches the interpreter through the
    # symlink `home`, the directory above the interpreter's bin/: a venv must
    # be entered through its own bin/ for Python to find pyvenv.cfg.
    interpreter = rctx.path(python)
    rctx.symlink(interpreter.dirname.dirname, "home")
    rctx.file("bin/python3", "\n".join([
        "#!/bin/sh",
        "# Generated by @pare//toolchains:repositories.bzl. Do not edit.",
        "# %s, distributions sha256 %s" % (version, packages),
        'exec "$(dirname "$(readlink -f "$0")")/../home/%s/%s" "$@"' % (interpreter.dirname.basename, interpreter.basename),
        "",
    ]), executable = True)
    rctx.file("BUILD.bazel", "\n".join([
        "# Generated by @pare//toolchains:repositories.bzl. Do not edit.",
        'load("@bazel_tools//tools/python:toolchain.bzl", "py_runtime_pair")',
        'package(default_visibility = ["//visibility:public"])',
        "py_runtime(",
        '    name = "py3_runtime",',
        '    interpreter = "bin/python3",',
        '    python_version = "PY3",',
        # The launcher stub (standard library only) otherwise starts with
        # `#!/usr/bin/env python`, which a strict action environment lacks.
        # The base interpreter is a machine path, not a checkout's.
        "    stub_shebang = %r," % ("#!" + base_python),
        ")",
        'py_runtime_pair(name = "runtime_pair", py3_runtime = ":py3_runtime")',
        "toolchain(",
        '    name = "python_toolchain",',
        '    toolchain = ":runtime_pair",',
        '    toolchain_type = "@bazel_tools//tools/python:toolchain_type",',
        ")",
        "",
    ]))

pare_python_repository = repository_rule(
    implementation = _pare_python_repository_impl,
    environ = ["PARE_PYTHON"],
    local = True,
    doc = "Registers the project venv's interpreter as the Python toolchain.",
)

def _pare_jdk_repository_impl(rctx):
    home = rctx.os.environ.get("JAVA_HOME", "")
    if home and rctx.path(home + "/bin/javac").exists:
        javac = rctx.path(home + "/bin/javac")
    else:
        javac = rctx.which("javac")
    if javac == None:
        rctx.file("BUILD.bazel", "\n".join([
            "# Generated: no JDK found on this machine.",
            'package(default_visibility = ["//visibility:public"])',
            'genrule(name = "missing", outs = ["missing.txt"], cmd = "echo \'pare: no javac found; run tools/setup.sh (apt: openjdk-17-jdk-headless) or set JAVA_HOME\' >&2; exit 1")',
            'alias(name = "javac", actual = ":missing")',
            'alias(name = "java", actual = ":missing")',
            'alias(name = "include", actual = ":missing")',
            "",
        ]))
        return
    bin_dir = javac.realpath.dirname
    for tool in ["javac", "java"]:
        rctx.file("bin/" + tool, "#!/bin/sh\nexec %s/%s \"$@\"\n" % (bin_dir, tool), executable = True)
    rctx.file("BUILD.bazel", "\n".join([
        "# Generated by @pare//toolchains:repositories.bzl. Do not edit.",
        'package(default_visibility = ["//visibility:public"])',
        'exports_files(["bin/javac", "bin/java"])',
        'alias(name = "javac", actual = "bin/javac")',
        'alias(name = "java", actual = "bin/java")',
        "",
    ]))

pare_jdk_repository = repository_rule(
    implementation = _pare_jdk_repository_impl,
    environ = ["JAVA_HOME", "PATH"],
    local = True,
    doc = "Wraps the host JDK's javac and java (for the Android AAR's classes.jar and host JVM tests).",
)

def _cpu_description(rctx):
    """The host CPU's model and sorted feature flags, as text."""
    cpuinfo = rctx.path("/proc/cpuinfo")
    if cpuinfo.exists:
        fields = {}
        for line in rctx.read(cpuinfo).splitlines():
            name, _, value = line.partition(":")
            name = name.strip()
            if name in ("model name", "flags", "Features", "CPU implementer", "CPU part") and name not in fields:
                fields[name] = value.strip()
        flags = sorted({f: None for f in (fields.get("flags") or fields.get("Features") or "").split(" ") if f}.keys())
        model = fields.get("model name") or " ".join([fields.get("CPU implementer", ""), fields.get("CPU part", "")]).strip()
        return "model: %s\nfeatures: %s\n" % (model or "unknown", " ".join(flags))
    sysctl = rctx.which("sysctl")
    if sysctl != None:  # macOS: the brand string and the hw.optional feature bits
        result = rctx.execute([sysctl, "machdep.cpu.brand_string", "machdep.cpu.features", "machdep.cpu.leaf7_features", "hw.optional"])
        if result.return_code == 0:
            return "\n".join(sorted(result.stdout.strip().splitlines())) + "\n"
    return "unknown\n"

def _pare_host_cpu_repository_impl(rctx):
    rctx.file("cpu.txt", "# Generated by @pare//toolchains:repositories.bzl. Do not edit.\nos: %s\narch: %s\n%s" % (
        rctx.os.name,
        rctx.os.arch if hasattr(rctx.os, "arch") else "unknown",
        _cpu_description(rctx),
    ))
    rctx.file("BUILD.bazel", "\n".join([
        "# Generated by @pare//toolchains:repositories.bzl. Do not edit.",
        'package(default_visibility = ["//visibility:public"])',
        'exports_files(["cpu.txt"])',
        "",
    ]))

pare_host_cpu_repository = repository_rule(
    implementation = _pare_host_cpu_repository_impl,
    local = True,
    doc = """Records the host CPU (model and feature flags) in cpu.txt.

Every pytest suite (tests/pytest_suite.bzl) takes it as data: the runtime's
ISA dispatch and torch's vector paths follow the CPU, so a test's result is
the CPU's too, and neither the disk cache nor a remote cache may serve a
result from a machine with other features. Fetched anew with each Bazel
server (local = True): a new machine or another CPU gives another file.""",
)
