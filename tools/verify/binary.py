"""One ELF or Mach-O shared library, read once with LIEF into plain data.

Everything tools/verify and tools/size_diff need from a binary is collected
here in one pass: sections, defined symbols (demangled, with sizes), the
exported dynamic symbols, the libraries it needs and the platform facts
(architecture, page alignment, Mach-O build version).

Names are C-level names: Mach-O's leading underscore is removed, so an ELF and
a Mach-O build of the same code have the same names. C++ names are demangled
with LLVM's demangler (tools/verify/demangle.py).

Symbol sizes: ELF symbols carry st_size; Mach-O nlist entries do not, so a
Mach-O symbol extends to the next symbol address in its section (or the
section's end), alignment padding included. An ELF function with st_size 0
(hand-written assembly, crt files) is sized the same way. Several symbols at
one address (aliases) each get the full extent; attribution
(tools/size_diff/attribution.py) counts every byte once.
"""

from __future__ import annotations

import bisect
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import lief

from tools.verify.demangle import demangle_all, macho_c_name
from tools.verify.errors import VerifyError

lief.logging.disable()

ELF = "elf"
MACHO = "macho"

# Mach-O nlist n_type bits (<mach-o/nlist.h>).
_N_STAB = 0xE0
_N_PEXT = 0x10
_N_TYPE = 0x0E
_N_EXT = 0x01
_N_ABS = 0x2
_N_SECT = 0xE

# AArch64/ARM mapping symbols ($x, $d.12, ...) mark code/data ranges; not names.
_MAPPING_SYMBOL = re.compile(r"^\$[adtx](?:\.\d+)?$")

_ELF_ARCH = {"AARCH64": "arm64", "X86_64": "x86_64", "ARM": "arm", "I386": "x86", "RISCV": "riscv"}
_MACHO_ARCH = {"ARM64": "arm64", "X86_64": "x86_64", "ARM": "arm", "X86": "x86"}


@dataclass(frozen=True)
class Section:
    name: str  # ".text"; Mach-O: "__TEXT,__text"
    address: int
    size: int
    file_backed: bool  # False for .bss / zerofill: memory, not file bytes
    executable: bool

    @property
    def end(self) -> int:
        return self.address + self.size


@dataclass(frozen=True)
class Symbol:
    name: str  # C-level name: mangled for C++, Mach-O underscore removed
    demangled: str
    address: int
    size: int  # extent in bytes (see size_source)
    size_source: str  # "st_size", "gap" (next symbol / section end) or "none"
    section: str | None  # containing allocated section, None for absolute symbols
    is_function: bool
    is_global: bool  # external binding (it may still be hidden, i.e. not exported)


@dataclass(frozen=True)
class Export:
    name: str
    demangled: str
    address: int
    is_function: bool


@dataclass(frozen=True)
class BinaryInfo:
    path: Path
    format: str  # "elf" or "macho"
    arch: str  # "arm64", "x86_64", ...
    is_shared_library: bool
    file_bytes: int
    sections: tuple[Section, ...]
    symbols: tuple[Symbol, ...]  # defined symbols from the full symbol table
    has_symbol_table: bool  # False for a stripped binary
    exports: tuple[Export, ...]  # ELF: defined default-visibility .dynsym; Mach-O: the export trie
    needed: tuple[str, ...]  # ELF DT_NEEDED; Mach-O LC_LOAD_DYLIB and friends
    load_alignments: tuple[int, ...]  # ELF PT_LOAD p_align; empty for Mach-O
    build_platform: str | None = None  # Mach-O LC_BUILD_VERSION platform, e.g. "ios"
    min_os: tuple[int, ...] | None = None  # Mach-O LC_BUILD_VERSION minos
    notes: tuple[str, ...] = field(default=())
    imports: tuple[str, ...] = field(default=())  # undefined symbols the loader resolves (sorted; Mach-O: no _)
    # How the loader's fixups are stored (relocation_form()) and their bytes.
    relocations: str = ""
    relocation_bytes: int = 0

    def section_for(self, address: int) -> Section | None:
        for s in self.sections:
            if s.address <= address < s.end:
                return s
        return None


def read_binary(path: str | os.PathLike[str], *, cxxfilt: str | None = None, demangle: bool = True) -> BinaryInfo:
    """Reads `path` (ELF or Mach-O; a fat Mach-O's arm64 slice). Raises VerifyError for user errors."""
    path = Path(path)
    if not path.exists():
        raise VerifyError(f"{path}: no such file; build it first (tools/bazel build <target>)")
    if not path.is_file():
        raise VerifyError(f"{path}: not a file; pass the library itself (lib<name>.so or .dylib)")
    with path.open("rb") as f:
        magic = f.read(4)
    if magic == b"!<ar":
        raise VerifyError(f"{path}: a static archive; pass the shared library (.so / .dylib) built from it")
    parsed = lief.parse(str(path))
    if parsed is None:
        raise VerifyError(f"{path}: not an ELF or Mach-O binary")
    notes = []
    if isinstance(parsed, lief.MachO.FatBinary):
        slices = [parsed.at(i) for i in range(parsed.size)]
        chosen = next((s for s in slices if s.header.cpu_type == lief.MachO.Header.CPU_TYPE.ARM64), slices[0])
        if len(slices) > 1:
            notes.append(f"fat Mach-O with {len(slices)} slices: read the {_macho_arch(chosen)} slice")
        parsed = chosen
    if isinstance(parsed, lief.ELF.Binary):
        info = _read_elf(path, parsed)
    elif isinstance(parsed, lief.MachO.Binary):
        info = _read_macho(path, parsed)
    else:
        raise VerifyError(f"{path}: {type(parsed).__name__} binaries are not supported; Pare builds ELF and Mach-O")
    if notes:
        info["notes"] = tuple(notes)
    return _finish(info, cxxfilt=cxxfilt, demangle=demangle)


# --- ELF ---

# Dynamic tags of each relocation table form: (form, table tag, size tag).
# Bionic's own forms (bionic/libc/include/elf.h): packed "APS2" RELA/REL
# (API 23+) and RELR under pre-standard tags (API 28-29). The Android
# toolchain picks by API level (toolchains/toolchains.bzl).
_ELF_RELOCATION_TABLES = (
    ("RELR", 36, 35),
    ("RELR (Android tags)", 0x6FFFE000, 0x6FFFE001),
    ("APS2 (Android packed)", 0x60000011, 0x60000012),
    ("APS2 (Android packed)", 0x6000000F, 0x60000010),
    ("RELA", 7, 8),
    ("REL", 17, 18),
)
_DT_PLTRELSZ = 2


def _elf_relocations(elf: lief.ELF.Binary) -> tuple[str, int]:
    """The forms of the dynamic relocation tables ("RELR + APS2 (Android
    packed)", "RELA", ...; PLT relocations aside) and their bytes, PLT's included."""
    values = {int(e.tag): e.value for e in elf.dynamic_entries}
    forms, size = [], values.get(_DT_PLTRELSZ, 0)
    for form, table, size_tag in _ELF_RELOCATION_TABLES:
        if table in values and form not in forms:
            forms.append(form)
        if table in values:
            size += values.get(size_tag, 0)
    return " + ".join(forms) or "none", size


def _read_elf(path: Path, elf: lief.ELF.Binary) -> dict:
    alloc = lief.ELF.Section.FLAGS.ALLOC
    execinstr = lief.ELF.Section.FLAGS.EXECINSTR
    sections = [
        Section(
            name=s.name,
            address=s.virtual_address,
            size=s.size,
            file_backed=s.type != lief.ELF.Section.TYPE.NOBITS,
            executable=s.has(execinstr),
        )
        for s in elf.sections
        if s.has(alloc) and s.size
    ]
    has_symtab = any(s.type == lief.ELF.Section.TYPE.SYMTAB for s in elf.sections)
    raw = []
    has_locals = False
    skip_types = {lief.ELF.Symbol.TYPE.SECTION, lief.ELF.Symbol.TYPE.FILE}
    for s in elf.symtab_symbols:
        if not s.name or s.shndx == 0 or s.type in skip_types or _MAPPING_SYMBOL.match(s.name):
            continue
        is_global = s.binding != lief.ELF.Symbol.BINDING.LOCAL
        has_locals = has_locals or not is_global
        raw.append(
            (
                s.name,
                s.value,
                s.size,
                s.type in (lief.ELF.Symbol.TYPE.FUNC, lief.ELF.Symbol.TYPE.GNU_IFUNC),
                is_global,
            )
        )
    exports = []
    exported_bindings = {
        lief.ELF.Symbol.BINDING.GLOBAL,
        lief.ELF.Symbol.BINDING.WEAK,
        lief.ELF.Symbol.BINDING.GNU_UNIQUE,
    }
    exported_visibility = {lief.ELF.Symbol.VISIBILITY.DEFAULT, lief.ELF.Symbol.VISIBILITY.PROTECTED}
    for s in elf.dynamic_symbols:
        if s.name and s.shndx != 0 and s.binding in exported_bindings and s.visibility in exported_visibility:
            exports.append((s.name, s.value, s.type in (lief.ELF.Symbol.TYPE.FUNC, lief.ELF.Symbol.TYPE.GNU_IFUNC)))
    needed = tuple(e.name for e in elf.dynamic_entries if e.tag == lief.ELF.DynamicEntry.TAG.NEEDED)
    imports = tuple(sorted({s.name for s in elf.dynamic_symbols if s.name and s.shndx == 0}))
    loads = tuple(seg.alignment for seg in elf.segments if seg.type == lief.ELF.Segment.TYPE.LOAD)
    relocations, relocation_bytes = _elf_relocations(elf)
    return {
        "path": path,
        "format": ELF,
        "arch": _ELF_ARCH.get(elf.header.machine_type.name, elf.header.machine_type.name.lower()),
        "is_shared_library": elf.header.file_type == lief.ELF.Header.FILE_TYPE.DYN,
        "file_bytes": path.stat().st_size,
        "sections": tuple(sections),
        "raw_symbols": raw,
        # `strip --strip-unneeded` / `-x` keep a .symtab of globals only; the
        # hidden (now local) kernels are what verification needs.
        "has_symbol_table": has_symtab and has_locals,
        "raw_exports": exports,
        "needed": needed,
        "imports": imports,
        "load_alignments": loads,
        "relocations": relocations,
        "relocation_bytes": relocation_bytes,
        "sized_by_table": True,
    }


# --- Mach-O ---


def _macho_arch(macho: lief.MachO.Binary) -> str:
    name = macho.header.cpu_type.name
    return _MACHO_ARCH.get(name, name.lower())


def _macho_relocations(macho: lief.MachO.Binary) -> dict:
    """Chained fixups (iOS 13.4+, what the iOS toolchain links) or dyld's
    rebase/bind opcodes, and their bytes."""
    if macho.has_dyld_chained_fixups:
        return {"relocations": "chained fixups", "relocation_bytes": macho.dyld_chained_fixups.data_size}
    if macho.has_dyld_info:
        info = macho.dyld_info
        sizes = (info.rebase[1], info.bind[1], info.weak_bind[1], info.lazy_bind[1])
        return {"relocations": "dyld info opcodes", "relocation_bytes": sum(sizes)}
    return {"relocations": "none", "relocation_bytes": 0}


def _read_macho(path: Path, macho: lief.MachO.Binary) -> dict:
    zerofill = {
        lief.MachO.Section.TYPE.ZEROFILL,
        lief.MachO.Section.TYPE.GB_ZEROFILL,
        lief.MachO.Section.TYPE.THREAD_LOCAL_ZEROFILL,
    }
    code_flags = lief.MachO.Section.FLAGS.PURE_INSTRUCTIONS | lief.MachO.Section.FLAGS.SOME_INSTRUCTIONS
    sections = []
    for s in macho.sections:
        if not s.size or s.segment_name == "__DWARF" or s.has(lief.MachO.Section.FLAGS.DEBUG_INFO):
            continue
        sections.append(
            Section(
                name=f"{s.segment_name},{s.name}",
                address=s.virtual_address,
                size=s.size,
                file_backed=s.type not in zerofill,
                executable=bool(int(s.flags) & int(code_flags)),
            )
        )
    raw = []
    seen = set()
    has_locals = False
    for s in macho.symbols:
        if s.origin != lief.MachO.Symbol.ORIGIN.SYMTAB:
            continue
        t = s.raw_type
        if t & _N_STAB or (t & _N_TYPE) not in (_N_SECT, _N_ABS) or not s.name:
            continue
        key = (s.name, s.value)
        if key in seen:  # ld64.lld can list a symbol twice
            continue
        seen.add(key)
        is_global = bool(t & _N_EXT)
        has_locals = has_locals or not is_global
        raw.append((macho_c_name(s.name), s.value, 0, None, is_global))
    exports = [(macho_c_name(s.name), s.export_info.address, None) for s in macho.exported_symbols if s.name]
    dylib_commands = {
        lief.MachO.LoadCommand.TYPE.LOAD_DYLIB,
        lief.MachO.LoadCommand.TYPE.LOAD_WEAK_DYLIB,
        lief.MachO.LoadCommand.TYPE.REEXPORT_DYLIB,
        lief.MachO.LoadCommand.TYPE.LAZY_LOAD_DYLIB,
        lief.MachO.LoadCommand.TYPE.LOAD_UPWARD_DYLIB,
    }
    needed = tuple(c.name for c in macho.commands if c.command in dylib_commands)
    imports = tuple(sorted({macho_c_name(s.name) for s in macho.imported_symbols if s.name}))
    build_platform = min_os = None
    if macho.has_build_version:
        build_platform = macho.build_version.platform.name.lower()
        min_os = tuple(macho.build_version.minos)
    return {
        "path": path,
        "format": MACHO,
        "arch": _macho_arch(macho),
        "is_shared_library": macho.header.file_type == lief.MachO.Header.FILE_TYPE.DYLIB,
        "file_bytes": path.stat().st_size,
        "sections": tuple(sections),
        "raw_symbols": raw,
        # `strip -x` keeps only external symbols; the unstripped library has
        # the hidden (now local) ones too.
        "has_symbol_table": has_locals,
        "raw_exports": exports,
        "needed": needed,
        "imports": imports,
        "load_alignments": (),
        **_macho_relocations(macho),
        "build_platform": build_platform,
        "min_os": min_os,
        "sized_by_table": False,
    }


# --- both ---


def _finish(info: dict, *, cxxfilt: str | None, demangle: bool) -> BinaryInfo:
    sections: tuple[Section, ...] = info["sections"]
    raw = info.pop("raw_symbols")
    raw_exports = info.pop("raw_exports")
    sized_by_table = info.pop("sized_by_table")
    names = [r[0] for r in raw] + [e[0] for e in raw_exports]
    demangled = demangle_all(names, cxxfilt) if demangle else list(names)
    sym_names, export_names = demangled[: len(raw)], demangled[len(raw) :]

    by_start = sorted(sections, key=lambda s: s.address)
    starts = [s.address for s in by_start]

    def containing(address: int) -> Section | None:
        i = bisect.bisect_right(starts, address) - 1
        if i >= 0 and by_start[i].address <= address < by_start[i].end:
            return by_start[i]
        return None

    # Distinct symbol addresses per section, for gap sizes.
    addresses: dict[str, list[int]] = {}
    homes = []
    for name, address, _size, _func, _glob in raw:
        home = containing(address)
        homes.append(home)
        if home is not None:
            addresses.setdefault(home.name, []).append(address)
    for k in addresses:
        addresses[k] = sorted(set(addresses[k]))

    def gap(home: Section, address: int) -> int:
        lst = addresses[home.name]
        i = bisect.bisect_right(lst, address)
        end = lst[i] if i < len(lst) else home.end
        return min(end, home.end) - address

    symbols = []
    for (name, address, size, is_func, is_global), dem, home in zip(raw, sym_names, homes):
        if is_func is None:  # Mach-O: code if it lives in an instruction section
            is_func = bool(home and home.executable)
        if home is None:
            size, source = 0, "none"
        elif sized_by_table and size:
            source = "st_size"
        elif not sized_by_table or is_func:
            size, source = gap(home, address), "gap"
        else:
            source = "st_size"
        symbols.append(Symbol(name, dem, address, size, source, home.name if home else None, is_func, is_global))
    symbols.sort(key=lambda s: (s.address, s.name))

    exports = []
    for (name, address, is_func), dem in zip(raw_exports, export_names):
        if is_func is None:
            home = containing(address)
            is_func = bool(home and home.executable)
        exports.append(Export(name, dem, address, is_func))
    exports.sort(key=lambda e: e.name)
    return BinaryInfo(symbols=tuple(symbols), exports=tuple(exports), **info)
