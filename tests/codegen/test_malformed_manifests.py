"""Malformed manifests: each is rejected with one line naming the place, the
problem and the fix (issue 13, part 4).

Every case asserts the whole message, so a message that loses its line
number, its "did you mean" or its fix fails here. docs/manifest.md lists the
message shapes; the well-formed side (defaults, quirks, round trip) is in
test_codegen_manifest.py.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from codegen_testlib import INVENTORY_DIR, REPO_ROOT

import codegen
from codegen import ManifestError

VALID_KEYS = (
    "valid keys: include_all_operators, include_all_non_op_selectives, debug_info, operators, "
    "kernel_metadata, et_kernel_metadata, custom_classes, build_features"
)
OPERATOR_FIELDS = "name, is_root_operator, is_used_for_training, include_all_overloads, debug_info"
DTYPES = "Byte Char Short Int Long Half Float Double ComplexFloat Bool BFloat16"
OP_NAME_FIX = "write namespace::name or namespace::name.overload, e.g. aten::add.Tensor"

# (id, manifest text, the exact message when read as "m.yaml")
MALFORMED = [
    (
        "yaml_unclosed_flow_mapping",
        "operators:\n  aten::add.Tensor: {\n",
        "m.yaml:3: malformed YAML: while parsing a flow node expected the node content, but found '<stream end>'; fix the syntax at that line",
    ),
    (
        "yaml_tab_indentation",
        "operators:\n\taten::relu: {}\n",
        "m.yaml:2: malformed YAML: while scanning for the next token found character '\\t' that cannot start any token; fix the syntax at that line",
    ),
    (
        "yaml_bad_indentation",
        "operators:\n  aten::relu: {}\n kernel_metadata: {}\n",
        "m.yaml:3: malformed YAML: while parsing a block mapping expected <block end>, but found '<block mapping start>'; fix the syntax at that line",
    ),
    (
        "yaml_unterminated_quote",
        "operators:\n  'aten::relu: {}\n",
        "m.yaml:3: malformed YAML: while scanning a quoted scalar found unexpected end of stream; fix the syntax at that line",
    ),
    (
        "yaml_two_documents",
        "operators: {}\n---\noperators: {}\n",
        "m.yaml:2: malformed YAML: expected a single document in the stream but found another document; fix the syntax at that line",
    ),
    (
        "yaml_python_tag",
        "include_all_operators: !!python/object/apply:os.system [ls]\n",
        "m.yaml:1: include_all_operators must be true or false, got a list; write `include_all_operators: true` or `include_all_operators: false`",
    ),
    (
        "binary_garbage",
        "\x00\x01\x02PARE\x7f",
        "m.yaml:1: not a YAML text file (control character 0x00 at character 0); pass the manifest YAML, not a binary file",
    ),
    (
        "empty_file",
        "",
        "m.yaml: the manifest is empty; trace the model again, or write `include_all_operators: true` to select everything",
    ),
    (
        "only_comments",
        "# selected operators\n\n",
        "m.yaml: the manifest is empty; trace the model again, or write `include_all_operators: true` to select everything",
    ),
    (
        "top_level_scalar",
        "aten::relu\n",
        "m.yaml:1: the manifest must be a YAML mapping, got str 'aten::relu'; start with `operators:` (docs/manifest.md)",
    ),
    (
        "top_level_number",
        "42\n",
        "m.yaml:1: the manifest must be a YAML mapping, got int 42; start with `operators:` (docs/manifest.md)",
    ),
    (
        "top_level_list_of_mappings",
        "- operators: {}\n",
        "m.yaml:1: the manifest is a list (read as a legacy list of operator names) but this entry is a mapping; remove the leading `- ` so the manifest is a mapping starting with `operators:`",
    ),
    (
        "complex_key",
        "? [operators]\n: {}\n",
        "m.yaml:1: a key must be a plain name; write the key as a string",
    ),
    (
        "unknown_top_level_key_typo",
        "operators: {}\nkernel_metdata: {}\n",
        "m.yaml:2: unknown top-level key 'kernel_metdata' (did you mean 'kernel_metadata'?); " + VALID_KEYS,
    ),
    (
        "unknown_top_level_key_alias",
        "ops:\n  aten::relu: {}\n",
        "m.yaml:1: unknown top-level key 'ops' (did you mean 'operators'?); " + VALID_KEYS,
    ),
    (
        "unknown_top_level_key_far",
        "version: 2\n",
        "m.yaml:1: unknown top-level key 'version'; " + VALID_KEYS,
    ),
    (
        "operator_at_top_level",
        "aten::relu: {}\n",
        "m.yaml:1: operator 'aten::relu' is at the top level; indent it under `operators:`",
    ),
    (
        "duplicate_top_level_key",
        "operators: {}\ncustom_classes: []\noperators: {}\n",
        "m.yaml:3: duplicate key 'operators' (first at line 1); keep one entry and merge their contents",
    ),
    (
        "duplicate_operator",
        "operators:\n  aten::add.Tensor: {}\n  aten::add.Tensor: {include_all_overloads: false}\n",
        "m.yaml:3: duplicate key 'aten::add.Tensor' (first at line 2); keep one entry and merge their contents",
    ),
    (
        "duplicate_kernel_tag",
        "kernel_metadata:\n  add_kernel: [Float]\n  add_kernel: [Long]\n",
        "m.yaml:3: duplicate key 'add_kernel' (first at line 2); keep one entry and merge their contents",
    ),
    (
        "op_without_namespace",
        "operators:\n  relu: {}\n",
        "m.yaml:2: operator 'relu' has no namespace; did you mean aten::relu? " + OP_NAME_FIX,
    ),
    (
        "op_without_namespace_with_overload",
        "operators:\n  add.Tensor: {}\n",
        "m.yaml:2: operator 'add.Tensor' has no namespace; did you mean aten::add.Tensor? " + OP_NAME_FIX,
    ),
    (
        "op_without_namespace_in_list",
        "operators: [relu]\n",
        "m.yaml:1: operator 'relu' has no namespace; did you mean aten::relu? " + OP_NAME_FIX,
    ),
    (
        "op_without_namespace_legacy_list",
        "- aten::add.Tensor\n- relu\n",
        "m.yaml:2: operator 'relu' has no namespace; did you mean aten::relu? " + OP_NAME_FIX,
    ),
    (
        "op_single_colon",
        "operators:\n  aten:relu: {}\n",
        "m.yaml:2: operator 'aten:relu' is not a full operator name; did you mean aten::relu? " + OP_NAME_FIX,
    ),
    (
        "op_torch_ops_spelling",
        "operators:\n  torch.ops.aten.add.Tensor: {}\n",
        "m.yaml:2: operator 'torch.ops.aten.add.Tensor' is not a full operator name; did you mean aten::add.Tensor? "
        + OP_NAME_FIX,
    ),
    (
        "op_dotted_namespace",
        "operators:\n  aten.relu: {}\n",
        "m.yaml:2: operator 'aten.relu' is not a full operator name; did you mean aten::relu? " + OP_NAME_FIX,
    ),
    (
        "op_two_overloads",
        "operators:\n  aten::add.Tensor.out: {}\n",
        "m.yaml:2: operator 'aten::add.Tensor.out' is not a full operator name; " + OP_NAME_FIX,
    ),
    (
        "op_empty_name",
        "operators:\n  '': {}\n",
        "m.yaml:2: an operator name must be a non-empty string, got str ''; write it as a string (quote it if needed)",
    ),
    (
        "op_name_is_number",
        "operators:\n  1: {}\n",
        "m.yaml:2: an operator name must be a non-empty string, got int 1; write it as a string (quote it if needed)",
    ),
    (
        "op_name_null",
        "operators:\n  ~: {}\n",
        "m.yaml:2: an operator name must be a non-empty string, got nothing; write it as a string (quote it if needed)",
    ),
    (
        "operators_scalar",
        "operators: aten::relu\n",
        "m.yaml:1: operators must map operator names to their fields, got str 'aten::relu'; write `operators:` then `  aten::add.Tensor: {}` lines",
    ),
    (
        "operator_not_mapping",
        "operators:\n  aten::relu: true\n",
        "m.yaml:2: operator aten::relu must be a mapping of its fields, got bool True; write `aten::relu: {}` or list its fields (is_root_operator, is_used_for_training, include_all_overloads, debug_info)",
    ),
    (
        "operator_unknown_field_typo",
        "operators:\n  aten::relu:\n    is_root: true\n",
        "m.yaml:3: unknown field 'is_root' in operator aten::relu (did you mean 'is_root_operator'?); valid fields: "
        + OPERATOR_FIELDS,
    ),
    (
        "operator_top_level_key_inside",
        "operators:\n  aten::relu:\n    kernel_metadata: {relu_kernel: [Float]}\n",
        "m.yaml:3: kernel_metadata is inside operator aten::relu; move it to the top level (no indentation); valid fields here: "
        + OPERATOR_FIELDS,
    ),
    (
        "operator_name_mismatch",
        "operators:\n  aten::add.Tensor: {name: aten::mul.Tensor}\n",
        "m.yaml:2: operator aten::add.Tensor has name: 'aten::mul.Tensor'; make `name` equal the key or remove it",
    ),
    (
        "is_root_operator_string",
        "operators:\n  aten::relu: {is_root_operator: 'no thanks'}\n",
        "m.yaml:2: aten::relu.is_root_operator must be true or false, got str 'no thanks'; write `is_root_operator: true` or `is_root_operator: false`",
    ),
    (
        "is_root_operator_quoted_bool",
        "operators:\n  aten::relu: {is_root_operator: 'false'}\n",
        "m.yaml:2: aten::relu.is_root_operator must be true or false, got str 'false'; write `is_root_operator: false` without quotes",
    ),
    (
        "is_used_for_training_int",
        "operators:\n  aten::relu: {is_used_for_training: 0}\n",
        "m.yaml:2: aten::relu.is_used_for_training must be true or false, got int 0; write `is_used_for_training: true` or `is_used_for_training: false`",
    ),
    (
        "include_all_overloads_list",
        "operators:\n  aten::relu: {include_all_overloads: [true]}\n",
        "m.yaml:2: aten::relu.include_all_overloads must be true or false, got a list; write `include_all_overloads: true` or `include_all_overloads: false`",
    ),
    (
        "include_all_operators_string",
        "include_all_operators: all\n",
        "m.yaml:1: include_all_operators must be true or false, got str 'all'; write `include_all_operators: true` or `include_all_operators: false`",
    ),
    (
        "include_all_non_op_selectives_int",
        "include_all_non_op_selectives: 1\n",
        "m.yaml:1: include_all_non_op_selectives must be true or false, got int 1; write `include_all_non_op_selectives: true` or `include_all_non_op_selectives: false`",
    ),
    (
        "debug_info_scalar",
        "debug_info: model.ptl\n",
        "m.yaml:1: debug_info must be a list, got str 'model.ptl'; write a YAML list, e.g. [\"model.ptl\"]",
    ),
    (
        "debug_info_mapping",
        "operators:\n  aten::relu:\n    debug_info: {model: a.ptl}\n",
        'm.yaml:3: aten::relu.debug_info must be a list, got a mapping; write a YAML list, e.g. ["model.ptl"]',
    ),
    (
        "kernel_metadata_list",
        "kernel_metadata: [Float]\n",
        "m.yaml:1: kernel_metadata must map kernel tags to dtype lists, got a list; write `kernel_metadata:` then `  add_kernel: [Float]` lines",
    ),
    (
        "kernel_metadata_dtypes_scalar",
        "kernel_metadata:\n  add_kernel: Float\n",
        "m.yaml:2: kernel_metadata.add_kernel must be a list, got str 'Float'; write a YAML list, e.g. [Float, Long]",
    ),
    (
        "kernel_metadata_dtype_float32",
        "kernel_metadata:\n  add_kernel:\n  - Long\n  - float32\n",
        "m.yaml:4: unknown dtype 'float32' in kernel_metadata.add_kernel; did you mean Float? dtypes are PyTorch ScalarType names: "
        + DTYPES,
    ),
    (
        "kernel_metadata_dtype_float",
        "kernel_metadata:\n  add_kernel: [float]\n",
        "m.yaml:2: unknown dtype 'float' in kernel_metadata.add_kernel; did you mean Float? dtypes are PyTorch ScalarType names: "
        + DTYPES,
    ),
    (
        "kernel_metadata_dtype_torch_prefix",
        "kernel_metadata:\n  add_kernel: [torch.int64]\n",
        "m.yaml:2: unknown dtype 'torch.int64' in kernel_metadata.add_kernel; did you mean Long? dtypes are PyTorch ScalarType names: "
        + DTYPES,
    ),
    (
        "kernel_metadata_dtype_typo",
        "kernel_metadata:\n  add_kernel: [Flaot]\n",
        "m.yaml:2: unknown dtype 'Flaot' in kernel_metadata.add_kernel; did you mean Float? dtypes are PyTorch ScalarType names: "
        + DTYPES,
    ),
    (
        "kernel_metadata_dtype_nonsense",
        "kernel_metadata:\n  add_kernel: [zzzzzz]\n",
        "m.yaml:2: unknown dtype 'zzzzzz' in kernel_metadata.add_kernel; dtypes are PyTorch ScalarType names: "
        + DTYPES,
    ),
    (
        "kernel_metadata_dtype_number",
        "kernel_metadata:\n  add_kernel: [6]\n",
        "m.yaml:2: dtype 6 in kernel_metadata.add_kernel is a number; did you mean Float? write PyTorch ScalarType names: "
        + DTYPES,
    ),
    (
        "kernel_metadata_tag_number",
        "kernel_metadata:\n  7: [Float]\n",
        "m.yaml:2: a kernel tag must be a non-empty string, got int 7; write it as a string (quote it if needed)",
    ),
    (
        "custom_classes_scalar",
        "custom_classes: LinearPackedParams\n",
        "m.yaml:1: custom_classes must be a list, got str 'LinearPackedParams'; write a YAML list, e.g. [LinearPackedParams]",
    ),
    (
        "custom_classes_nested_list",
        "custom_classes: [[LinearPackedParams]]\n",
        "m.yaml:1: each entry of custom_classes must be a non-empty string, got a list; write it as a string (quote it if needed)",
    ),
    (
        "build_features_mapping",
        "build_features: {op_profiling: true}\n",
        "m.yaml:1: build_features must be a list, got a mapping; write a YAML list, e.g. [op_profiling]",
    ),
    (
        "et_kernel_metadata_list",
        "et_kernel_metadata: [v1]\n",
        "m.yaml:1: et_kernel_metadata must map operator names to kernel-key lists, got a list; write it as ExecuTorch does, or remove it (Pare ignores it)",
    ),
]


def _message(text: str) -> str:
    with pytest.raises(ManifestError) as info:
        codegen.loads(text, source="m.yaml")
    return str(info.value)


@pytest.mark.parametrize("text, expected", [c[1:] for c in MALFORMED], ids=[c[0] for c in MALFORMED])
def test_malformed_manifest_message(text, expected):
    assert _message(text) == expected


def test_cases_are_distinct():
    assert len({c[0] for c in MALFORMED}) == len({c[1] for c in MALFORMED}) == len(MALFORMED)


# --- what only the runtime's inventory can tell (codegen.resolve) ---

NOT_PROVIDED = f"m.yaml: not provided by the runtime ({INVENTORY_DIR}): "
NOT_PROVIDED_FIX = (
    "; remove them from the manifest, implement them in the runtime, "
    "or pass --allow-unknown-ops (allow_unknown_ops=True) to drop them"
)


@pytest.mark.parametrize(
    "text, listing",
    [
        ("operators:\n  aten::relux: {}\n", "1 operator aten::relux (did you mean aten::relu?)"),
        (
            "include_all_operators: true\noperators:\n  atne::relu: {}\n",
            "1 operator atne::relu (did you mean aten::relu?)",
        ),
        (
            "operators:\n  aten::add: {include_all_overloads: false}\n",
            "1 operator aten::add (include_all_overloads is false and the runtime has no default overload; "
            "name one of aten::add.Scalar aten::add.Tensor or set include_all_overloads: true)",
        ),
        (
            "operators:\n  prim::TupleConstruct: {}\ncustom_classes: [LinearPackedParam]\n",
            "1 operator prim::TupleConstruct; 1 custom class LinearPackedParam (did you mean LinearPackedParams?)",
        ),
    ],
    ids=["unknown_op_typo", "unknown_namespace_typo", "no_default_overload", "unknown_op_and_class"],
)
def test_manifest_the_runtime_cannot_provide(text, listing, inventory):
    with pytest.raises(ManifestError) as info:
        codegen.resolve(codegen.loads(text, source="m.yaml"), inventory)
    assert str(info.value) == NOT_PROVIDED + listing + NOT_PROVIDED_FIX


# --- files ---


def test_missing_file(tmp_path):
    path = tmp_path / "nope.yaml"
    with pytest.raises(ManifestError) as info:
        codegen.load(path)
    assert str(info.value) == f"{path}: no such manifest file; check the path"


def test_directory_instead_of_file(tmp_path):
    with pytest.raises(ManifestError) as info:
        codegen.load(tmp_path)
    assert str(info.value) == f"{tmp_path}: cannot read manifest (Is a directory); check the path and permissions"


def test_not_utf8(tmp_path):
    path = tmp_path / "latin1.yaml"
    data = "operators:\n  aten::relu: {debug_info: [caf\u00e9]}\n".encode("latin-1")
    path.write_bytes(data)
    with pytest.raises(ManifestError) as info:
        codegen.load(path)
    assert str(info.value) == f"{path}: not UTF-8 text (byte {data.index(0xE9)}); save the manifest as UTF-8 YAML"


def test_program_file_passed_as_manifest(tmp_path):
    # A common mix-up: the .pare program instead of its manifest.
    from pare.program import ProgramBuilder

    pb = ProgramBuilder()
    m = pb.method("forward")
    m.output(m.op("aten::relu", m.input("Float", [2])))
    path = tmp_path / "model.pare"
    path.write_bytes(pb.to_bytes())
    with pytest.raises(ManifestError) as info:
        codegen.load(path)
    assert str(info.value) == (
        f"{path}: this is a Pare program, not a manifest; pass the manifest YAML the tracer wrote for it"
    )


def test_binary_file(tmp_path):
    path = tmp_path / "libpare.so"
    path.write_bytes(b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)))
    with pytest.raises(ManifestError) as info:
        codegen.load(path)
    assert str(info.value) == f"{path}: a binary file, not a manifest (NUL byte at offset 7); pass the manifest YAML"


# --- the CLI prints the same line, once, without a traceback ---


@pytest.mark.parametrize(
    "text, expected",
    [
        (
            "operators:\n  relu: {}\n",
            "{path}:2: operator 'relu' has no namespace; did you mean aten::relu? " + OP_NAME_FIX,
        ),
        ("\x00garbage", "{path}: a binary file, not a manifest (NUL byte at offset 0); pass the manifest YAML"),
        (
            "kernel_metadata:\n  add_kernel: [float32]\n",
            "{path}:2: unknown dtype 'float32' in kernel_metadata.add_kernel; did you mean Float? "
            "dtypes are PyTorch ScalarType names: " + DTYPES,
        ),
        ("operators:\n  aten::relux: {}\n", None),
    ],
    ids=["no_namespace", "binary", "bad_dtype", "unknown_op"],
)
@pytest.mark.parametrize("command", ["check", "generate"])
def test_cli_prints_one_line(tmp_path, text, expected, command):
    path = tmp_path / "m.yaml"
    path.write_text(text)
    args = [str(path)] if command == "check" else ["--manifest", str(path), "--out", str(tmp_path / "out")]
    result = subprocess.run(
        [sys.executable, "-m", "codegen", command, *args, "--inventory", str(INVENTORY_DIR)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 2
    assert result.stdout == ""
    if expected is None:
        expected = (
            f"{path}: not provided by the runtime ({INVENTORY_DIR}): 1 operator aten::relux "
            f"(did you mean aten::relu?)" + NOT_PROVIDED_FIX
        )
    assert result.stderr == "error: " + expected.format(path=path) + "\n"
    assert not (tmp_path / "out").exists()


# Explicit YAML tags over values they cannot hold: PyYAML's constructors raise
# ValueError or KeyError, which used to escape as a traceback (the manifest
# fuzz target found `!!int includrue`, kept in fuzz/regressions/manifest/).
@pytest.mark.parametrize(
    "text, message",
    [
        (
            "!!int includrue\n",
            "m.yaml:1: cannot read 'includrue' as !!int (ValueError); remove the explicit !!int tag or fix the value",
        ),
        (
            "operators:\n  aten::add.Tensor:\n    is_root_operator: !!bool maybe\n",
            "m.yaml:3: cannot read 'maybe' as !!bool (KeyError); remove the explicit !!bool tag or fix the value",
        ),
        (
            "!!binary zz\n",  # PyYAML's own ConstructorError: reported as malformed YAML
            "m.yaml:1: malformed YAML: failed to decode base64 data: Incorrect padding; fix the syntax at that line",
        ),
        (
            "!!timestamp 2020-99-99\n",
            "m.yaml:1: cannot read '2020-99-99' as !!timestamp (ValueError); remove the explicit !!timestamp tag or fix "
            "the value",
        ),
        (
            "!!python/object:os.system x\n",
            "m.yaml:1: malformed YAML: could not determine a constructor for the tag "
            "'tag:yaml.org,2002:python/object:os.system'; fix the syntax at that line",
        ),
    ],
    ids=["int", "bool", "binary", "timestamp", "python_object"],
)
def test_explicit_tag_over_a_value_it_cannot_hold(text, message):
    with pytest.raises(codegen.CodegenError) as e:
        codegen.loads(text, source="m.yaml")
    assert str(e.value) == message
