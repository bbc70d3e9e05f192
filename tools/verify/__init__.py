"""tools/verify: prove with LIEF which symbols a selective runtime kept and dropped.

Library API (the CLI, `python -m tools.verify`, is a thin layer over it):

    from tools.verify import verify, render_text
    result = verify(unstripped_lib, expected_symbols_json, platform="ios_arm64", stripped=shipped_lib)
    print(render_text(result)); result.passed

See docs/verify.md.
"""

from tools.verify.binary import BinaryInfo, Export, Section, Symbol, read_binary
from tools.verify.errors import EXIT_FAILED, EXIT_OK, EXIT_USER_ERROR, VerifyError
from tools.verify.expected import Entry, Expected, classify, load_expected
from tools.verify.platforms import PLATFORMS, get_platform, infer_platform
from tools.verify.report import render_json, render_text, to_json
from tools.verify.verify import VerifyResult, bundle_paths, verify

__all__ = [
    "BinaryInfo",
    "Entry",
    "Expected",
    "Export",
    "PLATFORMS",
    "Section",
    "Symbol",
    "VerifyError",
    "VerifyResult",
    "EXIT_FAILED",
    "EXIT_OK",
    "EXIT_USER_ERROR",
    "bundle_paths",
    "classify",
    "get_platform",
    "infer_platform",
    "load_expected",
    "read_binary",
    "render_json",
    "render_text",
    "to_json",
    "verify",
]
