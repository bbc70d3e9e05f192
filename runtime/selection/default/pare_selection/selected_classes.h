#pragma once
// Select-everything default: every custom class (runtime/kernels/classes.def)
// and build feature (runtime/kernels/features.def). See docs/selection.md.
#define TORCH_CUSTOM_CLASS_ALLOWLIST_ALL 1
#define TORCH_BUILD_FEATURE_ALLOWLIST_ALL 1
