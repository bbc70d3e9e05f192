#pragma once
// Dtype dispatch with selective build.
//
//   return pare::dispatch<tags::add_kernel>(ctx, dtype, [&](auto tt) -> Error {
//     using T = typename decltype(tt)::type;
//     ... body for element type T ...
//   });
//
// or, equivalently, PARE_DISPATCH(add_kernel, ctx, dtype, T, { ... }).
//
// For each dtype the tag declares (runtime/inventory/*/*.tags.def), the body runs
// inside the never-inlined function template instance
// pare::dispatch_case<pare::tags::<tag>, T, F>, whose symbol the size
// verifier looks for. Dtypes the tag does not declare report "not
// supported" (decided by `if constexpr`: no such instance exists); declared
// ones the app does not select report "not selected" with the fix. That
// test reads a link-time constant (selection.h), which the app's link step
// folds: an unselected instance is unreachable there and is deleted before
// any machine code exists.

#include "runtime/registry/kernel.h"

namespace pare {

template <typename T>
struct TypeTag {
  using type = T;
};

// One instance per selected (tag, dtype). Never inline: the instance is the
// unit the linker keeps or drops and the verifier checks.
template <typename Tag, typename T, typename F>
PARE_NOINLINE Error dispatch_case(F& fn) {
  return fn(TypeTag<T>{});
}

class FormatBuffer;  // runtime/core/format.h

namespace detail {

// The errors of a dispatch, naming the tag: Tag::name, or kTagInfo<Tag>
// (inventory.h) where the message lists its dtypes too.
PARE_COLD Error dtype_not_selected(KernelContext& ctx, const char* tag_name, ScalarType t);
PARE_COLD Error dtype_not_supported(KernelContext& ctx, const TagInfo& tag, ScalarType t);
// Appends "Half, BFloat16, Float, Double": the dtypes `tag` declares.
PARE_COLD void append_dtype_list(FormatBuffer& out, const TagInfo& tag);

template <typename Tag, typename T, typename F>
PARE_ALWAYS_INLINE Error dispatch_one(KernelContext& ctx, F& fn) {
  constexpr ScalarType kType = scalar_type_of<T>;
  if constexpr (!tag_declares<Tag>(kType)) {
    return dtype_not_supported(ctx, kTagInfo<Tag>, kType);
  } else {
    if (!kernel_dtype_selected(Tag::id, kType)) return dtype_not_selected(ctx, Tag::name, kType);
    ctx.record_kernel_dtype(Tag::id, kType);
    return dispatch_case<Tag, T, F>(fn);
  }
}

}  // namespace detail

// A dtype the tag does not declare breaks out to the one "not supported"
// call after the switch, which all of them share (it reads `dtype`), so an
// undeclared dtype costs a dispatch nothing but its jump-table entry.
template <typename Tag, typename F>
Error dispatch(KernelContext& ctx, ScalarType dtype, F&& fn) {
  switch (dtype) {
#define PARE_DTYPE(name, code, cpp_type, bytes, torch_name)                                                 \
  case ScalarType::name:                                                                                    \
    if constexpr (tag_declares<Tag>(ScalarType::name)) return detail::dispatch_one<Tag, cpp_type>(ctx, fn); \
    break;
#include "runtime/core/dtypes.def"
    case ScalarType::Undefined: break;
  }
  return detail::dtype_not_supported(ctx, kTagInfo<Tag>, dtype);
}

// A dispatch whose dtype is known at compile time (T): the tag's T
// specialisation, or the not-selected error when the build does not select
// it (no code for `fn` then). For code selected by a tag of its own within
// an op that already dispatched, e.g. a prepacked layer's fused epilogues.
template <typename Tag, typename T, typename F>
PARE_ALWAYS_INLINE Error dispatch_as(KernelContext& ctx, F&& fn) {
  return detail::dispatch_one<Tag, T>(ctx, fn);
}

// Fast paths: code that only some shapes take (a 1x1 convolution over a
// few pixels), behind a tag of its own, so that only the runtimes whose
// traced inputs took it contain it:
//
//   if constexpr (fast_path_compiled<tags::gemm_narrow_kernel, T>()) {
//     if (narrow && fast_path_selected<tags::gemm_narrow_kernel, T>()) {
//       return run_fast_path<tags::gemm_narrow_kernel, T>(ctx, [&] { ...; return Error::Ok; });
//     }
//   }
//   ... the general path ...
//
// Unlike a dtype dispatch, a build that does not select the (tag, dtype)
// runs the general path instead: slower, never an error. The instrumentation
// build has every fast path and records the ones taken, so the tracer
// writes them into the manifest like any kernel dtype; the fast path runs
// inside dispatch_case<Tag, T, F>, the unit the app's link step drops and
// the verifier checks. (Where a path takes every input its operator's
// arguments allow, as nn.MaxPool2d(2)'s loop does, it is better a dispatch
// of its own ahead of the general one, as max_pool.cc's is: then a trace
// that took it alone leaves the general path out.)
//
// fast_path_compiled: the tag declares T, so the shared code has the path
// for T (decided at compile time); fast_path_selected: the app selects it
// (a link-time constant).
template <typename Tag, typename T>
constexpr bool fast_path_compiled() {
  return tag_declares<Tag>(scalar_type_of<T>);
}

template <typename Tag, typename T>
PARE_ALWAYS_INLINE bool fast_path_selected() {
  static_assert(fast_path_compiled<Tag, T>(), "guard with if constexpr (fast_path_compiled<Tag, T>())");
  return kernel_dtype_selected(Tag::id, scalar_type_of<T>);
}

template <typename Tag, typename T, typename F>
PARE_ALWAYS_INLINE Error run_fast_path(KernelContext& ctx, F&& fn) {
  static_assert(fast_path_compiled<Tag, T>(), "guard with if constexpr (fast_path_compiled<Tag, T>())");
  ctx.record_kernel_dtype(Tag::id, scalar_type_of<T>);
  auto body = [&fn](TypeTag<T>) -> Error { return fn(); };
  return dispatch_case<Tag, T>(body);
}

}  // namespace pare

// PARE_DISPATCH(add_kernel, ctx, dtype, T, { body using T; return Error::Ok; })
#define PARE_DISPATCH(TAG, CTX, DTYPE, T, ...)                                                    \
  ::pare::dispatch<::pare::tags::TAG>((CTX), (DTYPE), [&](auto pare_type_tag_) -> ::pare::Error { \
    using T = typename decltype(pare_type_tag_)::type;                                            \
    __VA_ARGS__                                                                                   \
  })
