"""`python -m tools.tracer`: a thin argparse layer over the tracer library.

Exit status: 0 success, 1 the numeric check failed (outputs differ from torch
beyond tolerance), 2 a user error (one line on stderr, no traceback), 3 an
internal error (a bug: rerun with --traceback and report it).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from tools.cli_parser import add_delegate_arguments, name_list, one_line_parser

PROG = "python -m tools.tracer"
EXIT_OK, EXIT_MISMATCH, EXIT_USER_ERROR, EXIT_INTERNAL = 0, 1, 2, 3


class _UsageError(Exception):
    pass


_Parser = one_line_parser(_UsageError, see=f"{PROG} --help")


def _parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog=PROG,
        description="Export PyTorch models to Pare programs, trace them on the instrumentation runtime into "
        "manifests (PyTorch's selected-operators YAML), check a built runtime's numerics, merge and diff manifests "
        "(docs/tracer.md).",
        epilog="examples:\n"
        f"  {PROG} export apps/demo/model.py -o demo.pare\n"
        f"  {PROG} trace apps/demo/model.py -o apps/demo/manifest.yaml\n"
        f"  {PROG} check apps/demo/model.py --runtime bazel-bin/apps/demo/runtime/linux_x86_64/libpare_runtime.so\n"
        f"  {PROG} merge a.yaml b.yaml -o app.yaml\n"
        f"  {PROG} diff new.yaml old.yaml",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    # Global flags, accepted before or after the command.
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "-q", "--quiet", action="store_true", default=argparse.SUPPRESS, help="no progress lines on stderr"
    )
    common.add_argument(
        "--traceback",
        action="store_true",
        default=argparse.SUPPRESS,
        help="show Python tracebacks (for reporting tracer bugs)",
    )
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines on stderr")
    p.add_argument("--traceback", action="store_true", help="show Python tracebacks (for reporting tracer bugs)")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=_Parser)
    add_parser = sub.add_parser

    def add_command(name: str, **kwargs) -> argparse.ArgumentParser:
        return add_parser(name, parents=[common], **kwargs)

    sub.add_parser = add_command

    def model_command(name: str, help: str) -> argparse.ArgumentParser:
        from tools.tracer import passes  # no torch at import: merge and diff stay light

        c = sub.add_parser(
            name,
            help=help,
            description=help,
            epilog=passes.epilog(),
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        c.add_argument(
            "model",
            metavar="MODEL",
            help="model spec: a .py file whose build() returns (module, inputs) (docs/model_spec.md)",
        )
        passes.add_arguments(c)
        add_delegate_arguments(
            c,
            "backends that run the parts of the graph they support, in order of preference "
            "(docs/delegates.md; e.g. example); the rest runs on Pare's CPU kernels",
            "a compile spec for the backends that take KEY (repeatable)",
        )
        c.add_argument(
            "--delegate-fallback",
            action="store_true",
            help="also write each delegated method's CPU copy (METHOD__cpu), which the runtime runs on a "
            "device where a backend is unavailable, and (trace) select its CPU kernels",
        )
        return c

    def tolerance_flags(c: argparse.ArgumentParser) -> None:
        c.add_argument(
            "--rtol",
            type=_non_negative,
            help="relative tolerance for floating outputs (default: per "
            "dtype, e.g. 1e-4 for float32; the spec's TOLERANCE overrides it, this overrides both)",
        )
        c.add_argument("--atol", type=_non_negative, help="absolute tolerance for floating outputs")

    e = model_command("export", "torch.export the model and write a Pare program file")
    e.add_argument("-o", "--output", required=True, metavar="FILE", help="program file to write (e.g. model.pare)")

    t = model_command(
        "trace",
        "run the model on the instrumentation runtime over every representative input, check "
        "its numerics against torch eager, and write the manifest",
    )
    t.add_argument("-o", "--output", metavar="FILE", help="manifest to write (default: print it on stdout)")
    t.add_argument(
        "--runtime",
        metavar="LIB",
        help="instrumentation runtime .so (default: "
        "$PARE_INSTRUMENTATION_LIB, else bazel-bin/runtime/instrumentation/..., built when missing)",
    )
    t.add_argument(
        "--threads",
        action="store_true",
        help="select build feature threads (the app calls pare_method_set_num_threads); the same as --features threads",
    )
    t.add_argument(
        "--features",
        type=name_list("build feature"),
        default=(),
        metavar="NAME[,NAME]",
        help="build features the app uses besides those the trace records (e.g. output_buffers, for "
        "an app that hands the runtime its output buffers); each must be the runtime's",
    )
    tolerance_flags(t)

    c = model_command(
        "check",
        "run the model on a built runtime (x86_64 .so natively, Android arm64 .so under the "
        "qemu harness) and compare every output with torch eager",
    )
    c.add_argument("--runtime", required=True, metavar="LIB", help="the runtime .so to check")
    c.add_argument(
        "--program",
        metavar="FILE",
        help="run this program file (from export) instead of exporting "
        "the model again (--passes then does not apply: the file holds what export wrote)",
    )
    tolerance_flags(c)

    m = sub.add_parser(
        "merge",
        help="union of manifests (PyTorch semantics)",
        description="Union of manifests, as "
        "PyTorch's combine_selective_builders; prints a warning where the inputs disagree.",
    )
    m.add_argument("manifests", nargs="+", metavar="MANIFEST")
    m.add_argument("-o", "--output", metavar="FILE", help="merged manifest to write (default: stdout)")

    d = sub.add_parser(
        "diff",
        help="what manifest A selects that B does not, and the reverse",
        description="What manifest A selects that B does not (+), and what B selects that A does not (-).",
    )
    d.add_argument("a", metavar="A")
    d.add_argument("b", metavar="B")
    d.add_argument(
        "--inventory",
        nargs="?",
        const="",
        metavar="DIR",
        help="expand both against the runtime's "
        "inventory (default DIR: runtime/inventory) to compare concrete operators and (tag, dtype) pairs",
    )
    d.add_argument("--exit-code", action="store_true", help="exit 1 when the manifests differ")

    e = sub.add_parser(
        "explain",
        help="turn the message identifiers of a runtime built without error messages back into text",
        description="Replaces every {#1a2b3c4d ...} message identifier (what a runtime built with "
        "error_messages = False reports, docs/errors.md) by the message it stands for, read from "
        "the runtime sources. Reads the messages from the arguments, or from stdin (a log) without them.",
    )
    e.add_argument("messages", nargs="*", metavar="MESSAGE")
    e.add_argument(
        "--runtime-dir",
        metavar="DIR",
        help="the runtime/ sources the runtime was built from (default: this checkout's)",
    )
    return p


def _non_negative(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0, got {text}")
    return value


def _delegates(args):
    from tools.tracer.delegation import DelegateOptions

    options = DelegateOptions(tuple(args.delegate), tuple(args.delegate_spec), args.delegate_fallback)
    options.resolve()  # an unknown backend or spec fails here, before any export
    return options


def _delegation_summary(exported) -> str:
    return f"; delegated: {exported.delegation.describe()}" if exported.delegation is not None else ""


def _write(path: str, text: str | bytes) -> None:
    from tools.tracer.errors import TracerError

    out = Path(path)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_name(out.name + ".tmp")
        if isinstance(text, bytes):
            tmp.write_bytes(text)
        else:
            tmp.write_text(text, encoding="utf-8")
        tmp.replace(out)
    except OSError as e:
        raise TracerError(f"{path}: cannot write ({e.strerror}); check the directory exists and is writable") from None


def _tolerance(args):
    from tools.tracer.numerics import Tolerance

    if args.rtol is None and args.atol is None:
        return None
    return Tolerance(rtol=args.rtol, atol=args.atol)


def _cmd_export(args, progress) -> int:
    from tools.tracer.exporter import export_model
    from tools.tracer.model_spec import load_model_spec

    start = time.monotonic()
    delegates = _delegates(args)
    with progress.step(f"loading {args.model}"):
        spec = load_model_spec(args.model)
    exported = export_model(spec, passes=_passes(args), progress=progress, delegates=delegates)
    _write(args.output, exported.program)
    methods = ", ".join(f"{g.name} (inputs {', '.join(map(str, g.indices))})" for g in exported.groups)
    print(
        f"wrote {args.output}: {len(exported.program)} bytes; methods {methods}; "
        f"{sum(exported.op_counts.values())} instructions over {len(exported.op_counts)} operators; "
        f"{_passes_summary(exported)}{_delegation_summary(exported)} ({time.monotonic() - start:.1f}s)"
    )
    return EXIT_OK


def _passes(args) -> tuple[str, ...]:
    from tools.tracer import passes

    return passes.from_arguments(args)


def _passes_summary(exported) -> str:
    if not exported.passes:
        return "no graph passes"
    return "passes " + ", ".join(run.describe() for run in exported.passes)


def _summary(manifest) -> str:
    from tools.tracer.progress import plural

    roots = sum(op.is_root_operator for op in manifest.operators.values())
    pairs = sum(len(d) for d in manifest.kernel_metadata.values())
    return (
        f"{plural(len(manifest.operators), 'operator')} ({roots} root), "
        f"{plural(len(manifest.kernel_metadata), 'kernel tag')}, {plural(pairs, '(tag, dtype) pair')}, "
        f"{plural(len(manifest.custom_classes), 'custom class', 'custom classes')}, "
        f"{plural(len(manifest.build_features), 'build feature')}"
    )


def _print_checks(checks, progress) -> None:
    for c in checks:
        for o in c.outputs:
            progress.info(f"  inputs[{c.index}] ({c.method}) {o.line()}")


def _cmd_trace(args, progress) -> int:
    from tools.tracer.model_spec import load_model_spec
    from tools.tracer.progress import plural
    from tools.tracer.tracing import trace_model

    start = time.monotonic()
    delegates = _delegates(args)
    with progress.step(f"loading {args.model}"):
        spec = load_model_spec(args.model)
    result = trace_model(
        spec,
        runtime=args.runtime,
        passes=_passes(args),
        tolerance=_tolerance(args),
        features=args.features + (("threads",) if args.threads else ()),
        progress=progress,
        delegates=delegates,
    )
    text = result.manifest.dump()
    if args.output:
        _write(args.output, text)
        print(
            f"wrote {args.output}: {_summary(result.manifest)}; numeric check passed on "
            f"{plural(len(result.checks), 'input')}; {_passes_summary(result.exported)}"
            f"{_delegation_summary(result.exported)} ({time.monotonic() - start:.1f}s)"
        )
    else:
        sys.stdout.write(text)
    return EXIT_OK


def _cmd_check(args, progress) -> int:
    from tools.tracer.errors import TracerError
    from tools.tracer.model_spec import load_model_spec
    from tools.tracer.progress import plural
    from tools.tracer.tracing import check_model_report

    start = time.monotonic()
    program = None
    if args.program:
        try:
            program = Path(args.program).read_bytes()
        except OSError as e:
            raise TracerError(
                f"--program {args.program}: cannot read ({e.strerror}); pass a file written by {PROG} export"
            ) from None
    delegates = _delegates(args)
    with progress.step(f"loading {args.model}"):
        spec = load_model_spec(args.model)
    checks, delegated = check_model_report(
        spec,
        args.runtime,
        passes=_passes(args),
        program=program,
        tolerance=_tolerance(args),
        progress=progress,
        delegates=delegates,
    )
    _print_checks(checks, progress)
    outputs = sum(len(c.outputs) for c in checks)
    print(
        f"check passed: {plural(len(checks), 'input')}, {plural(outputs, 'output')} match torch eager on "
        f"{args.runtime}{'; delegated: ' + delegated.describe() if delegated is not None else ''} "
        f"({time.monotonic() - start:.1f}s)"
    )
    return EXIT_OK


def _cmd_merge(args, progress) -> int:
    import codegen

    manifests = [codegen.load(p) for p in args.manifests]
    result = codegen.merge(manifests, source=args.output or "<merged>")
    for line in result.diagnostics:
        print(f"warning: {line}", file=sys.stderr)
    text = result.manifest.dump()
    if args.output:
        _write(args.output, text)
        print(f"wrote {args.output}: {_summary(result.manifest)} (merged {len(manifests)} manifests)")
    else:
        sys.stdout.write(text)
    return EXIT_OK


def _cmd_diff(args, progress) -> int:
    import codegen
    from tools.tracer import paths

    a, b = codegen.load(args.a), codegen.load(args.b)
    inventory = None
    if args.inventory is not None:
        inventory = codegen.load_inventory(args.inventory or paths.inventory_dir())
    forward = codegen.diff(a, b, inventory=inventory)
    backward = codegen.diff(b, a, inventory=inventory)
    if forward.is_empty() and backward.is_empty():
        print(f"{args.a} and {args.b} select the same")
        return EXIT_OK
    if not forward.is_empty():
        print(f"{args.a} selects, {args.b} does not:")
        sys.stdout.write(forward.to_text())
    if not backward.is_empty():
        print(f"{args.b} selects, {args.a} does not:")
        sys.stdout.write("".join("-" + line[1:] + "\n" for line in backward.to_text().splitlines()))
    return EXIT_MISMATCH if args.exit_code else EXIT_OK


def _cmd_explain(args, progress) -> int:
    from pare import messages
    from tools.tracer.errors import TracerError

    try:
        table = messages.MessageTable.scan(args.runtime_dir or messages.DEFAULT_RUNTIME_DIR)
        lines = args.messages or sys.stdin.read().splitlines()
        for line in lines:
            print(messages.explain(line, table))
    except messages.MessageError as e:
        raise TracerError(str(e)) from None
    return EXIT_OK


_COMMANDS = {
    "export": _cmd_export,
    "trace": _cmd_trace,
    "check": _cmd_check,
    "merge": _cmd_merge,
    "diff": _cmd_diff,
    "explain": _cmd_explain,
}


def main(argv: Sequence[str] | None = None) -> int:
    # Under `bazel run`, relative paths are the user's, not the runfiles'.
    working_dir = os.environ.get("BUILD_WORKING_DIRECTORY")
    if working_dir:
        os.chdir(working_dir)
    argv = list(sys.argv[1:] if argv is None else argv)
    show_traceback = "--traceback" in argv
    try:
        args = _parser().parse_args(argv)
    except _UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USER_ERROR
    return _run(args, show_traceback)


def _run(args, show_traceback: bool) -> int:
    import codegen
    from pare.runtime import PareError
    from tools.tracer.errors import NumericMismatchError, TracerError
    from tools.tracer.progress import Progress

    progress = Progress.silent() if args.quiet else Progress()
    try:
        return _COMMANDS[args.command](args, progress)
    except NumericMismatchError as e:
        if show_traceback:
            raise
        print(f"error: {e}", file=sys.stderr)
        return EXIT_MISMATCH
    except (TracerError, codegen.CodegenError) as e:
        if show_traceback:
            raise
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USER_ERROR
    except PareError as e:
        if show_traceback:
            raise
        print(f"error: the Pare runtime failed: {e.status_name}: {e}", file=sys.stderr)
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # a tracer bug: say so in one line unless asked for the traceback
        if show_traceback:
            raise
        print(
            f"error: internal tracer error: {type(e).__name__}: {e}; rerun with --traceback and report it",
            file=sys.stderr,
        )
        return EXIT_INTERNAL
