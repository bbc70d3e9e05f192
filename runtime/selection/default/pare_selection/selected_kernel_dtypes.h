#pragma once
// Select-everything default: every dtype every kernel tag declares
// (runtime/inventory/*/*.tags.def). See docs/selection.md.
#include "runtime/core/scalar_type.h"
#define PARE_INCLUDE_ALL_KERNEL_DTYPES 1
