#pragma once
// Select-everything default: every custom class (runtime/inventory/classes.def)
// and build feature (runtime/inventory/features.def). See docs/selection.md.
#define TORCH_CUSTOM_CLASS_ALLOWLIST_ALL 1
#define TORCH_BUILD_FEATURE_ALLOWLIST_ALL 1
