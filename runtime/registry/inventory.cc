// Load-time lookups over the inventory (inventory.h) and the app's selected
// operators (selection.h).

#include "runtime/registry/selection.h"

#include "runtime/core/format.h"

namespace pare {
namespace {

// Hashes of every operator the runtime implements, selected or not.
constexpr uint32_t kKnownOpHashes[] = {
#define PARE_OP(name, fn) detail::fnv1a(name),
#include "runtime/inventory/inventory.inc"
#undef PARE_OP
};

}  // namespace

const OpEntry* find_op(const char* name) {
  // Linear: runs once per distinct operator of a program, at load time.
  for (size_t i = 0; i < kNumOps; ++i) {
    if (string_equal(kOpTable[i].name, name)) return &kOpTable[i];
  }
  return nullptr;
}

bool is_known_op(const char* name) {
  const uint32_t h = detail::fnv1a(name);
  for (uint32_t known : kKnownOpHashes) {
    if (known == h) return true;
  }
  return false;
}

bool find_class(const char* name, ClassId* id) {
  for (size_t i = 0; i < kNumClasses; ++i) {
    if (string_equal(kClasses[i].name, name)) {
      *id = static_cast<ClassId>(i);
      return true;
    }
  }
  return false;
}

}  // namespace pare
