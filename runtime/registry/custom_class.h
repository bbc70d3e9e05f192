#pragma once
// Custom classes: objects a program creates once (in a method's init
// section) and passes to operators, e.g. prepacked weights.
//
// A class is `pare::classes::<Name>`, derives from ObjectBase, is listed in
// runtime/inventory/classes.def, and declares
//
//   static constexpr char kName[] = "<Name>";
//   static constexpr ClassId kId = ClassId::<Name>;
//
// Code that touches the class is gated on its selection, PyTorch style:
//
//   inline constexpr auto kLinearPackedParamsClass =
//       selective_class_<classes::LinearPackedParams>("LinearPackedParams");
//   if (!kLinearPackedParamsClass.selected()) {
//     return class_not_selected(ctx, kLinearPackedParamsClass.name());
//   }
//   ... use it ...
//
// selected() reads a link-time constant (selection.h), so in an app that
// does not select the class the code after the test is unreachable and its
// methods are deleted by the app's link step.
// There is no RTTI: an object carries its ClassId, checked by
// KernelArgs::object<T>() before any cast.

#include "runtime/registry/selection.h"

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

// The name is a plain literal, not T::kName: a build without the class
// keeps the message's text but no symbol of the class (tools/verify).
template <typename T>
class selective_class_ {
 public:
  constexpr explicit selective_class_(const char* name) : name_(name) {}
  constexpr const char* name() const { return name_; }
  bool selected() const { return class_selected(T::kId); }

 private:
  const char* name_;
};

}  // namespace pare
