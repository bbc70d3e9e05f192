"""op_manifest, and choosing a target's manifest (`--define ops=<file>`)."""

load(":providers.bzl", "OpManifestInfo")

def _op_manifest_impl(ctx):
    return [
        DefaultInfo(files = depset([ctx.file.src])),
        OpManifestInfo(label = ctx.label, manifest = ctx.file.src),
    ]

op_manifest = rule(
    implementation = _op_manifest_impl,
    attrs = {
        "src": attr.label(
            mandatory = True,
            allow_single_file = [".yaml", ".yml"],
            doc = "The manifest: PyTorch's selected-operators YAML (docs/manifest.md).",
        ),
    },
    provides = [OpManifestInfo],
    doc = """A selected-operators manifest, as a target other rules can name.

Example:
    op_manifest(name = "demo_ops", src = "manifest.yaml")
    selective_runtime(name = "runtime", manifest = ":demo_ops")
""",
)

def manifest_of(target):
    """The manifest of a manifest attribute: an op_manifest or a .yaml file.

    Args:
      target: the attribute's target.

    Returns:
      (File, label string).
    """
    if OpManifestInfo in target:
        info = target[OpManifestInfo]
        return info.manifest, str(info.label)
    files = target.files.to_list()
    if len(files) != 1:
        fail("%s: a manifest must be one .yaml file or an op_manifest, got %d files" % (target.label, len(files)))
    return files[0], str(target.label)

def _candidate_names(target):
    file, label = manifest_of(target)
    return [file.basename, file.short_path, label, target.label.name]

def choose_manifest(ctx):
    """The manifest this build uses: `--define ops=<name>` among `manifests`, else `manifest`.

    A target that declares no `manifests` candidates ignores the define, so
    one invocation can build several apps with their own manifests.

    Args:
      ctx: a rule context with `manifest` and `manifests` attributes.

    Returns:
      (File, label string), as manifest_of.
    """
    requested = ctx.var.get("ops")
    if requested and ctx.attr.manifests:
        for candidate in ctx.attr.manifests:
            if requested in _candidate_names(candidate):
                return manifest_of(candidate)
        fail("%s: --define ops=%s is not one of this target's manifests; candidates: %s (add it to `manifests`)" % (
            ctx.label,
            requested,
            ", ".join([manifest_of(c)[0].basename for c in ctx.attr.manifests]),
        ))
    if not ctx.attr.manifest:
        fail("%s: set `manifest` (or `manifests` and --define ops=<file>)" % ctx.label)
    return manifest_of(ctx.attr.manifest)
