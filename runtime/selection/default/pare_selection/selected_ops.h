#pragma once
// Select-everything default for //runtime:full and the instrumentation
// build. Selective builds replace this directory with codegen output from a
// manifest (docs/selection.md).
#define TORCH_OPERATOR_ALLOWLIST_ALL 1
#define PARE_MANIFEST_NAME "everything (runtime/selection/default)"
