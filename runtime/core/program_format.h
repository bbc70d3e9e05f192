#pragma once
// The program format's constants (docs/program_format.md), made from
// runtime/core/program_format.def: kFormatVersionMajor/Minor, the record
// sizes, kDataAlignment, the sentinels, kMaxDim.

#include "runtime/core/compiler.h"

namespace pare {

#define PARE_FORMAT_CONSTANT(cpp_name, python_name, cpp_type, value) constexpr cpp_type cpp_name = value;
#include "runtime/core/program_format.def"

}  // namespace pare
