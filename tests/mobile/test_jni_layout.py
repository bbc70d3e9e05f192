"""runtime/jni/jni_min.h matches the JNI function table of the JDK's jni.h.

The bridge declares only the JNIEnv entries it calls (the JDK's header needs
<stdio.h>, which freestanding Android builds lack); this compiles both
headers side by side and checks every declared entry's offset.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT


def _jdk_include() -> Path:
    javac = shutil.which("javac")
    if not javac:
        pytest.fail("no JDK on PATH: tools/setup.sh installs openjdk-17-jdk-headless")
    home = Path(javac).resolve().parents[1]
    return home / "include"


def test_every_declared_entry_has_the_jdk_offset(tmp_path):
    header = (REPO_ROOT / "runtime/jni/jni_min.h").read_text()
    names = re.findall(r"\(\*(\w+)\)\(JNIEnv\* env", header)
    assert len(names) >= 10
    checks = "\n".join(
        f'_Static_assert(offsetof(struct pare_jni_interface, {n}) == offsetof(struct JNINativeInterface_, {n}), "{n}");'
        for n in names
    )
    src = tmp_path / "layout.c"
    src.write_text(
        "#include <stddef.h>\n#include <jni.h>\n"
        # Both headers name the same JNI types; rename ours for this check.
        + "".join(
            f"#define {t} pare_{t}\n"
            for t in ["JNIEnv", "jobject", "jclass", "jstring", "jarray", "jbyteArray", "jlongArray", "jthrowable"]
        )
        + '#include "runtime/jni/jni_min.h"\n'
        + checks
        + "\nint main(void) { return 0; }\n"
    )
    inc = _jdk_include()
    proc = subprocess.run(
        ["clang-16", "-fsyntax-only", "-std=c11", f"-I{inc}", f"-I{inc}/linux", f"-I{REPO_ROOT}", str(src)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
