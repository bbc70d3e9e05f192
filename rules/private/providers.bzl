"""Providers shared by Pare's rules, and multi_platform_attr: the attribute that takes a PareMultiPlatformInfo."""

PareLibraryInfo = provider(
    doc = "One platform's build of a Pare library: what ships and what verification reads.",
    fields = {
        "label": "(Label) the target, for error messages",
        "lib_name": "(str) library base name, e.g. pare_demo for libpare_demo.so",
        "shared": "(File) stripped shared library (.so / .dylib): what ships",
        "shared_unstripped": "(File) the same library before stripping, with its symbol table",
        "static": "(File or None) static archive of the same code (iOS only)",
    },
)

PareMultiPlatformInfo = provider(
    doc = "A Pare library built for several platforms in one build.",
    fields = {
        "label": "(Label) the target, for error messages",
        "libraries": "(dict[str, PareLibraryInfo]) platform row name -> that platform's build",
        "outputs": "(dict[str, tuple[File]]) platform row name -> files at the stable paths",
        "files": "(dict[str, struct]) platform row name -> its stable files by role: shared, unstripped, " +
                 "static (None but on iOS); the same roles bundle.json lists",
        "index": "(File) <name>/bundle.json: the bundle's platforms, files and their roles (docs/bazel.md)",
    },
)

def multi_platform_attr(doc):
    """The mandatory attribute of a rule that reads a PareMultiPlatformInfo (a selective_runtime's platform libraries)."""
    return attr.label(mandatory = True, providers = [PareMultiPlatformInfo], doc = doc)

OpManifestInfo = provider(
    doc = "A selected-operators manifest (PyTorch's YAML schema) and where it came from.",
    fields = {
        "label": "(Label) the op_manifest target, for error messages",
        "manifest": "(File) the YAML file",
    },
)

PareSelectionInfo = provider(
    doc = "Selection headers generated from one manifest, and what they promise.",
    fields = {
        "label": "(Label) the selection target",
        "manifest": "(File) the manifest the headers were generated from",
        "manifest_label": "(str) label of that manifest, for reports",
        "headers": "(depset[File]) pare_selection/*.h",
        "expected_symbols": "(File) expected_symbols.json, for tools/verify",
    },
)

PareBitcodeInfo = provider(
    doc = "Runtime layers compiled to LLVM bitcode, merged into one module (pare_bitcode_module).",
    fields = {
        "label": "(Label) the target, for error messages",
        "module": "(File) the merged module (.bc)",
    },
)
