#pragma once
// Custom classes: objects a program creates once (in a method's init
// section) and passes to operators, e.g. prepacked weights.
//
// A class is `pare::classes::<Name>`, derives from ObjectBase, is listed in
// runtime/kernels/classes.def, and declares
//
//   static constexpr char kName[] = "<Name>";
//   static constexpr ClassId kId = ClassId::<Name>;
//
// Code that touches the class is gated on its selection, PyTorch style:
//
//   inline constexpr auto kLinearPackedParamsClass =
//       selective_class_<classes::LinearPackedParams>(
//           TORCH_SELECTIVE_CLASS("LinearPackedParams"));
//   if constexpr (kLinearPackedParamsClass.selected()) { ... use it ... }
//   else { return class_not_selected(ctx, kLinearPackedParamsClass.name()); }
//
// so an unselected class's methods are never referenced and are stripped.
// There is no RTTI: an object carries its ClassId, checked by
// KernelArgs::object<T>() before any cast.

#include "runtime/registry/inventory.h"

namespace pare {

struct ObjectBase {
  ClassId class_id;
  // Set by KernelContext::create_object<T>; runs ~T when the owning method
  // is destroyed. Memory itself belongs to the method's load allocator.
  void (*destroy)(ObjectBase*);
  ObjectBase* next_owned;  // the owning method's list of live objects
};

template <typename T>
void destroy_object(ObjectBase* object) {
  static_cast<T*>(object)->~T();
}

template <typename T>
class selective_class_ {
 public:
  template <bool kSelected>
  constexpr explicit selective_class_(SelectiveStr<kSelected> name) : name_(name.name()), selected_(kSelected) {}
  constexpr const char* name() const { return name_; }
  constexpr bool selected() const { return selected_ && class_selected(T::kId); }

 private:
  const char* name_;
  bool selected_;
};

}  // namespace pare
