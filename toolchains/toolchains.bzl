"""Pare's clang-16 / lld-16 C++ toolchains, one per row of //platforms:table.bzl.

`pare_cc_toolchains()` is called from the BUILD file of the generated
@pare_llvm repository (see repositories.bzl), so tool paths are relative to
its wrapper scripts. For each platform row it defines a toolchain config, a
`cc_toolchain` and a `toolchain()` that toolchain resolution picks by the
row's constraints (`--incompatible_enable_cc_toolchain_resolution`).

Flavors:
  android  --target=<triple><api>, no sysroot (clang's freestanding headers
           only), ld.lld with --gc-sections, 16 KB max page size, GNU hash,
           build id, -z defs, and DT_NEEDED libc.so / libm.so / liblog.so from
           stub libraries built by //toolchains/android:system_stubs.
  ios      --target=<triple><min>, ld64.lld with -dead_strip and an explicit
           -platform_version, libSystem from //toolchains/ios:libsystem.
  linux    the host's (or Debian's cross) glibc, ld.lld with --gc-sections.

The runtime's own compile flags (-ffreestanding, -fno-exceptions, ...) are not
here: pare_cc_library in //rules:cc.bzl owns them, so host tools and tests can
still use the full C library.
"""

load("@bazel_tools//tools/build_defs/cc:action_names.bzl", "ACTION_NAMES")
load(
    "@bazel_tools//tools/cpp:cc_toolchain_config_lib.bzl",
    "artifact_name_pattern",
    "feature",
    "feature_set",
    "flag_group",
    "flag_set",
    "tool_path",
    "variable_with_value",
    "with_feature_set",
)
load("//platforms:table.bzl", "PLATFORMS")

PareSettingInfo = provider(
    doc = "The value of a Pare build setting.",
    fields = {"value": "(int, string or bool) the setting's value"},
)

def _setting_impl(ctx):
    return [PareSettingInfo(value = ctx.build_setting_value)]

int_setting = rule(
    implementation = _setting_impl,
    build_setting = config.int(flag = True),
    doc = "An integer build setting, set with --//pkg:name=value.",
)

string_setting = rule(
    implementation = _setting_impl,
    build_setting = config.string(flag = True),
    doc = "A string build setting, set with --//pkg:name=value.",
)

bool_setting = rule(
    implementation = _setting_impl,
    build_setting = config.bool(flag = True),
    doc = "A boolean build setting, set with --//pkg:name=true|false.",
)

def bool_setting_and_condition(name, build_setting_default, condition, condition_value = "true"):
    """A bool_setting and the config_setting that is true when it has one value.

    Args:
      name: the setting, set with --//pkg:name=true|false.
      build_setting_default: its value when the command line does not set it.
      condition: the config_setting's name, for select().
      condition_value: "true" or "false", the value the condition matches.
    """
    bool_setting(name = name, build_setting_default = build_setting_default)
    native.config_setting(name = condition, flag_values = {":" + name: condition_value})

_ALL_COMPILE = [
    ACTION_NAMES.assemble,
    ACTION_NAMES.preprocess_assemble,
    ACTION_NAMES.c_compile,
    ACTION_NAMES.cpp_compile,
    ACTION_NAMES.cpp_header_parsing,
    ACTION_NAMES.cpp_module_compile,
    ACTION_NAMES.cpp_module_codegen,
]

_LAYERING_ACTIONS = [
    ACTION_NAMES.c_compile,
    ACTION_NAMES.cpp_compile,
    ACTION_NAMES.cpp_header_parsing,
    ACTION_NAMES.cpp_module_compile,
]

_ALL_LINK = [
    ACTION_NAMES.cpp_link_executable,
    ACTION_NAMES.cpp_link_dynamic_library,
    ACTION_NAMES.cpp_link_nodeps_dynamic_library,
]

def _flags(actions, flags, features = None):
    return flag_set(
        actions = actions,
        flag_groups = [flag_group(flags = flags)],
        with_features = [with_feature_set(features = features)] if features else [],
    )

def _is_type(name):
    return variable_with_value(name = "libraries_to_link.type", value = name)

def _darwin_libraries_to_link_feature():
    """Bazel's libraries_to_link, with ld64's -force_load for whole archives.

    Bazel's built-in version spells whole archives -whole-archive, which only
    ELF linkers accept; pare_cc_library marks everything alwayslink.
    """
    return feature(
        name = "libraries_to_link",
        flag_sets = [flag_set(
            actions = _ALL_LINK,
            flag_groups = [flag_group(
                iterate_over = "libraries_to_link",
                expand_if_available = "libraries_to_link",
                flag_groups = [
                    flag_group(
                        iterate_over = "libraries_to_link.object_files",
                        expand_if_equal = _is_type("object_file_group"),
                        flags = ["%{libraries_to_link.object_files}"],
                    ),
                    flag_group(expand_if_equal = _is_type("object_file"), flags = ["%{libraries_to_link.name}"]),
                    flag_group(expand_if_equal = _is_type("interface_library"), flags = ["%{libraries_to_link.name}"]),
                    flag_group(
                        expand_if_equal = _is_type("static_library"),
                        flag_groups = [
                            flag_group(
                                expand_if_true = "libraries_to_link.is_whole_archive",
                                flags = ["-Wl,-force_load,%{libraries_to_link.name}"],
                            ),
                            flag_group(
                                expand_if_false = "libraries_to_link.is_whole_archive",
                                flags = ["%{libraries_to_link.name}"],
                            ),
                        ],
                    ),
                    flag_group(expand_if_equal = _is_type("dynamic_library"), flags = ["-l%{libraries_to_link.name}"]),
                    flag_group(expand_if_equal = _is_type("versioned_dynamic_library"), flags = ["-l:%{libraries_to_link.name}"]),
                ],
            )],
        )],
    )

def _target_triple(ctx):
    if ctx.attr.flavor == "android":
        return "%s%d" % (ctx.attr.triple, ctx.attr._android_api[PareSettingInfo].value)
    if ctx.attr.flavor == "ios":
        return "%s%s" % (ctx.attr.triple, ctx.attr._ios_min_version[PareSettingInfo].value)
    return ctx.attr.triple

def _android_relocation_flags(api):
    """The linker flags that pack an Android .so's dynamic relocations.

    The most compact form Bionic's loader at `api` reads (Bionic's
    android-changes-for-ndk-developers.md): RELR under the standard tags
    from API 30, RELR under Bionic's own tags at 28-29, Android's packed
    format (APS2) from 23, plain RELA below. RELR holds only relative
    relocations (nearly all of a runtime's: pointers in its tables); with
    android+relr the rest are packed as APS2. What each form saves, and how
    the emulator harness loads it: docs/size.md."""
    if api >= 30:
        return ["-Wl,--pack-dyn-relocs=android+relr"]
    if api >= 28:
        return ["-Wl,--pack-dyn-relocs=android+relr", "-Wl,--use-android-relr-tags"]
    if api >= 23:
        return ["-Wl,--pack-dyn-relocs=android"]
    return []

def _config_impl(ctx):
    flavor = ctx.attr.flavor
    triple = _target_triple(ctx)
    target = ["--target=" + triple]

    compile_flags = target + [
        # Reproducible outputs: no timestamps, no absolute paths.
        "-Wno-builtin-macro-redefined",
        "-D__DATE__=\"redacted\"",
        "-D__TIMESTAMP__=\"redacted\"",
        "-D__TIME__=\"redacted\"",
        "-fdebug-compilation-dir=.",
        "-fcoverage-compilation-dir=.",
        "-fno-ident",
        "-fcolor-diagnostics",
        "-Wall",
    ]

    # -O2: lld also merges strings that are the tail of another (an error
    # message's last words, a shorter one's whole text): 160 B on the demo.
    link_flags = target + ["-fuse-ld=lld", "-Wl,--gc-sections", "-Wl,-O2"] if flavor != "ios" else target + ["-fuse-ld=lld"]
    link_libs = []

    if flavor == "android":
        # No NDK: clang's own freestanding headers only, and Bionic resolved
        # against stubs so the .so carries the DT_NEEDED entries a device
        # expects.
        compile_flags += ["-nostdlibinc", "-fPIC"]
        stub_dir = ctx.files.system_libs[0].dirname
        link_flags += [
            "-nostdlib",
            "-Wl,-z,max-page-size=16384",
            "-Wl,--build-id=sha1",
            "-Wl,--hash-style=gnu",
            "-Wl,-z,defs",
            "-Wl,-z,relro",
            "-Wl,-z,now",
            "-Wl,--no-undefined-version",
            "-L" + stub_dir,
        ] + _android_relocation_flags(ctx.attr._android_api[PareSettingInfo].value)

        # libdl only for a runtime that calls dlopen (a backend with a
        # system driver, runtime/pal/pal.h): --as-needed records it then.
        link_libs = ["-lc", "-lm", "-llog", "-Wl,--as-needed", "-ldl", "-Wl,--no-as-needed"]
    elif flavor == "ios":
        min_version = ctx.attr._ios_min_version[PareSettingInfo].value
        compile_flags.append("-nostdlibinc")
        link_flags += [
            "-nostdlib",
            # clang only passes -platform_version to a linker it believes is
            # new enough; ld64.lld needs it.
            "-mlinker-version=705",
            "-Wl,-dead_strip",
            # Chained fixups (iOS 13.4+): no lazy binding, so no __DATA
            # segment of lazy pointers; binds live in __DATA_CONST, which
            # dyld makes read-only after fixing up. Saves a 16 KB page.
            "-Wl,-fixup_chains",
            "-Wl,-platform_version,ios,%s,%s" % (min_version, min_version),
            "-L" + ctx.files.system_libs[0].dirname,
        ]
        link_libs = ["-lSystem"]
    else:
        link_flags += ["-Wl,--build-id=sha1", "-Wl,--hash-style=gnu"]
        link_libs = ["-lm"]

    features = [
        feature(name = "supports_pic", enabled = True),
        feature(name = "supports_dynamic_linking", enabled = True),
        feature(name = "supports_start_end_lib", enabled = flavor != "ios"),
        feature(name = "dbg"),
        feature(name = "fastbuild"),
        feature(name = "opt"),
        feature(
            name = "pare_default_flags",
            enabled = True,
            flag_sets = [
                _flags(_ALL_COMPILE, compile_flags),
                _flags([ACTION_NAMES.cpp_compile, ACTION_NAMES.cpp_header_parsing], ["-std=c++17"]),
                _flags(_ALL_COMPILE, ["-O0", "-g"], ["dbg"]),
                _flags(_ALL_COMPILE, ["-O1"], ["fastbuild"]),
                _flags(_ALL_COMPILE, ["-O2", "-DNDEBUG", "-ffunction-sections", "-fdata-sections"], ["opt"]),
                _flags(_ALL_LINK, link_flags),
            ],
        ),
        # Bazel writes a module map per cc_library when "module_maps" is
        # enabled; "layering_check" (implying "use_module_maps") makes clang
        # reject an #include of a header that no direct dep provides.
        feature(name = "module_maps", enabled = True),
        feature(
            name = "use_module_maps",
            requires = [feature_set(features = ["module_maps"])],
            flag_sets = [flag_set(
                actions = _LAYERING_ACTIONS,
                flag_groups = [flag_group(flags = [
                    "-fmodule-name=%{module_name}",
                    "-fmodule-map-file=%{module_map_file}",
                ])],
            )],
        ),
        feature(
            name = "layering_check",
            implies = ["use_module_maps"],
            flag_sets = [flag_set(
                actions = _LAYERING_ACTIONS,
                flag_groups = [
                    flag_group(flags = ["-fmodules-strict-decluse", "-Wprivate-header"]),
                    flag_group(
                        iterate_over = "dependent_module_map_files",
                        flags = ["-fmodule-map-file=%{dependent_module_map_files}"],
                    ),
                ],
            )],
        ),
        # System libraries go after the user's objects and libraries.
        feature(
            name = "pare_system_libs",
            enabled = True,
            flag_sets = [_flags(_ALL_LINK, link_libs)],
        ),
    ]
    if flavor == "ios":
        features.append(feature(
            name = "archiver_flags",
            enabled = True,
            flag_sets = [flag_set(
                actions = [ACTION_NAMES.cpp_link_static_library],
                flag_groups = [
                    flag_group(flags = ["rcsD", "--format=darwin", "%{output_execpath}"]),
                    flag_group(
                        iterate_over = "libraries_to_link",
                        flag_groups = [flag_group(flags = ["%{libraries_to_link.name}"])],
                        expand_if_available = "libraries_to_link",
                    ),
                ],
            )],
        ))

    if flavor == "ios":
        features.append(_darwin_libraries_to_link_feature())

    artifact_patterns = []
    if flavor == "ios":
        artifact_patterns.append(artifact_name_pattern(
            category_name = "dynamic_library",
            prefix = "lib",
            extension = ".dylib",
        ))

    tool_paths = [
        tool_path(name = "gcc", path = "bin/clang"),
        tool_path(name = "cpp", path = "bin/clang"),
        tool_path(name = "ld", path = "bin/ld.lld"),
        tool_path(name = "ar", path = "bin/llvm-ar"),
        tool_path(name = "nm", path = "bin/llvm-nm"),
        tool_path(name = "objcopy", path = "bin/llvm-objcopy"),
        tool_path(name = "objdump", path = "bin/llvm-objdump"),
        tool_path(name = "strip", path = "bin/llvm-strip"),
        tool_path(name = "gcov", path = "bin/llvm-cov"),
        tool_path(name = "dwp", path = "bin/llvm-dwp"),
    ]

    return cc_common.create_cc_toolchain_config_info(
        ctx = ctx,
        toolchain_identifier = "pare_clang_" + ctx.attr.platform_name,
        host_system_name = "x86_64-linux-gnu",
        target_system_name = triple,
        target_cpu = ctx.attr.platform_name,
        target_libc = {"android": "bionic", "ios": "darwin", "linux": "glibc"}[flavor],
        compiler = "clang",
        abi_version = "clang-16",
        abi_libc_version = flavor,
        features = features,
        tool_paths = tool_paths,
        artifact_name_patterns = artifact_patterns,
        cxx_builtin_include_directories = ctx.attr.include_dirs,
    )

pare_cc_toolchain_config = rule(
    implementation = _config_impl,
    attrs = {
        "platform_name": attr.string(mandatory = True, doc = "Row name in //platforms:table.bzl."),
        "flavor": attr.string(mandatory = True, values = ["android", "ios", "linux"], doc = "How to compile and link."),
        "triple": attr.string(mandatory = True, doc = "Clang target triple, without API level / OS version."),
        "include_dirs": attr.string_list(doc = "Directories clang searches by default, for Bazel's include check."),
        "system_libs": attr.label(allow_files = True, doc = "Stub system libraries (Android) or .tbd (iOS); their directory goes on -L."),
        "_android_api": attr.label(default = Label("//toolchains:android_api")),
        "_ios_min_version": attr.label(default = Label("//toolchains:ios_min_version")),
    },
    provides = [CcToolchainConfigInfo],
    doc = "A clang-16 / lld-16 toolchain config for one row of the platform table.",
)

_SYSTEM_LIBS = {
    "android": Label("//toolchains/android:system_stubs"),
    "ios": Label("//toolchains/ios:libsystem"),
}

def pare_cc_toolchains(include_dirs):  # buildifier: disable=unnamed-macro (one toolchain set per repository)
    """Defines config, cc_toolchain and toolchain() for every platform row.

    Args:
      include_dirs: dict platform row name -> clang's default include dirs
        (measured by the repository rule).
    """
    for row in PLATFORMS:
        system_libs = _SYSTEM_LIBS.get(row.flavor)
        native.filegroup(
            name = row.name + "_compiler_files",
            srcs = ["tools", row.name + ".modulemap"],
        )
        native.filegroup(
            name = row.name + "_linker_files",
            srcs = ["tools"] + ([system_libs] if system_libs else []),
        )
        pare_cc_toolchain_config(
            name = row.name + "_config",
            platform_name = row.name,
            flavor = row.flavor,
            triple = row.triple,
            include_dirs = include_dirs[row.name],
            system_libs = system_libs,
        )
        native.cc_toolchain(
            name = row.name + "_cc_toolchain",
            toolchain_config = row.name + "_config",
            all_files = row.name + "_linker_files",
            ar_files = "tools",
            as_files = row.name + "_compiler_files",
            compiler_files = row.name + "_compiler_files",
            dwp_files = "tools",
            linker_files = row.name + "_linker_files",
            module_map = row.name + ".modulemap",
            objcopy_files = "tools",
            strip_files = "tools",
            supports_param_files = True,
        )
        native.toolchain(
            name = row.name + "_toolchain",
            exec_compatible_with = ["@platforms//os:linux", "@platforms//cpu:x86_64"],
            target_compatible_with = row.constraints,
            toolchain = row.name + "_cc_toolchain",
            toolchain_type = "@bazel_tools//tools/cpp:toolchain_type",
        )
