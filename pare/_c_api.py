"""The C API's declarations for ctypes: runtime/c_api/pare.h's structures,
the enumerations the SDK names, and every function's signature.

pare.runtime binds a runtime library with them (and re-exports them);
tests/runtime/test_api_docs.py checks them against the header.
"""

from __future__ import annotations

import ctypes

MAX_DIM = 8


class _TensorInfo(ctypes.Structure):
    _fields_ = [
        ("dtype", ctypes.c_int32),
        ("ndim", ctypes.c_int32),
        ("sizes", ctypes.c_int64 * MAX_DIM),
        ("strides", ctypes.c_int64 * MAX_DIM),
        ("data", ctypes.c_void_p),
    ]


# pare_planner's values, in order (runtime/c_api/pare.h).
PLANNERS = ("smaller", "first_fit", "greedy_by_size")


class _MemoryStats(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_uint64)
        for name in (
            "arena_bytes",
            "planned_arena_bytes",
            "persistent_bytes",
            "num_plans",
            "temporary_blocks",
            "first_fit_arena_bytes",
            "greedy_arena_bytes",
        )
    ]


_c = ctypes
_P = ctypes.c_void_p
_SIGNATURES = {
    "pare_version": (_c.c_char_p, []),
    "pare_format_version_major": (_c.c_uint32, []),
    "pare_is_tracing_build": (_c.c_int, []),
    "pare_isa": (_c.c_char_p, []),
    "pare_kernel_isa": (_c.c_char_p, []),
    "pare_set_max_isa": (_c.c_int, [_c.c_char_p]),
    "pare_status_name": (_c.c_char_p, [_c.c_int]),
    "pare_dtype_name": (_c.c_char_p, [_c.c_int32]),
    "pare_op_count": (_c.c_size_t, []),
    "pare_op_name": (_c.c_char_p, [_c.c_size_t]),
    "pare_kernel_dtype_count": (_c.c_size_t, []),
    "pare_kernel_dtype": (_c.c_int, [_c.c_size_t, _c.POINTER(_c.c_char_p), _c.POINTER(_c.c_char_p)]),
    "pare_class_count": (_c.c_size_t, []),
    "pare_class_name": (_c.c_char_p, [_c.c_size_t]),
    "pare_feature_count": (_c.c_size_t, []),
    "pare_feature_name": (_c.c_char_p, [_c.c_size_t]),
    "pare_program_load": (_c.c_int, [_c.c_void_p, _c.c_size_t, _c.c_uint32, _c.POINTER(_P)]),
    "pare_program_load_file": (_c.c_int, [_c.c_char_p, _c.POINTER(_P)]),
    "pare_program_destroy": (None, [_P]),
    "pare_program_error_message": (_c.c_char_p, [_P]),
    "pare_program_constants_in_place": (_c.c_int, [_P]),
    "pare_program_method_count": (_c.c_size_t, [_P]),
    "pare_program_method_name": (_c.c_char_p, [_P, _c.c_size_t]),
    "pare_method_create": (_c.c_int, [_P, _c.c_char_p, _c.POINTER(_P)]),
    "pare_method_destroy": (None, [_P]),
    "pare_method_error_message": (_c.c_char_p, [_P]),
    "pare_method_input_count": (_c.c_size_t, [_P]),
    "pare_method_output_count": (_c.c_size_t, [_P]),
    "pare_method_input_info": (_c.c_int, [_P, _c.c_size_t, _c.POINTER(_TensorInfo)]),
    "pare_method_set_input": (
        _c.c_int,
        [
            _P,
            _c.c_size_t,
            _c.c_int32,
            _c.POINTER(_c.c_int64),
            _c.c_size_t,
            _c.POINTER(_c.c_int64),
            _c.c_void_p,
            _c.c_size_t,
        ],
    ),
    "pare_method_execute": (_c.c_int, [_P]),
    "pare_method_output_kind": (_c.c_int, [_P, _c.c_size_t, _c.POINTER(_c.c_int32)]),
    "pare_method_output_tensor": (_c.c_int, [_P, _c.c_size_t, _c.POINTER(_TensorInfo)]),
    "pare_method_output_int": (_c.c_int, [_P, _c.c_size_t, _c.POINTER(_c.c_int64)]),
    "pare_method_output_double": (_c.c_int, [_P, _c.c_size_t, _c.POINTER(_c.c_double)]),
    "pare_method_output_bool": (_c.c_int, [_P, _c.c_size_t, _c.POINTER(_c.c_int32)]),
    "pare_method_memory_stats": (_c.c_int, [_P, _c.POINTER(_MemoryStats)]),
    "pare_method_set_profiling": (_c.c_int, [_P, _c.c_int]),
    "pare_method_set_planner": (_c.c_int, [_P, _c.c_int32]),
    "pare_method_set_output_buffer": (_c.c_int, [_P, _c.c_size_t, _c.c_void_p, _c.c_size_t]),
    "pare_method_state_name": (_c.c_char_p, [_P, _c.c_size_t]),
    "pare_method_reset_state": (_c.c_int, [_P]),
    "pare_method_create_sharing_state": (_c.c_int, [_P, _c.c_char_p, _P, _c.POINTER(_P)]),
    "pare_method_state_tensor": (_c.c_int, [_P, _c.c_char_p, _c.POINTER(_TensorInfo)]),
    "pare_method_set_state": (
        _c.c_int,
        [_P, _c.c_char_p, _c.c_int32, _c.POINTER(_c.c_int64), _c.c_size_t, _c.c_void_p, _c.c_size_t],
    ),
    "pare_method_set_num_threads": (_c.c_int, [_P, _c.c_uint32]),
    "pare_method_num_threads": (_c.c_uint32, [_P]),
    "pare_method_instruction_count": (_c.c_size_t, [_P]),
    "pare_method_profile": (
        _c.c_int,
        [_P, _c.c_size_t, _c.POINTER(_c.c_char_p), _c.POINTER(_c.c_uint64), _c.POINTER(_c.c_uint64)],
    ),
    "pare_ticks_per_second": (_c.c_uint64, []),
    "pare_trace_op_count": (_c.c_size_t, [_P]),
    "pare_trace_op": (_c.c_int, [_P, _c.c_size_t, _c.POINTER(_c.c_char_p), _c.POINTER(_c.c_int32)]),
    "pare_trace_kernel_dtype_count": (_c.c_size_t, [_P]),
    "pare_trace_kernel_dtype": (_c.c_int, [_P, _c.c_size_t, _c.POINTER(_c.c_char_p), _c.POINTER(_c.c_char_p)]),
    "pare_trace_class_count": (_c.c_size_t, [_P]),
    "pare_trace_class": (_c.c_char_p, [_P, _c.c_size_t]),
    "pare_trace_feature_count": (_c.c_size_t, [_P]),
    "pare_trace_feature": (_c.c_char_p, [_P, _c.c_size_t]),
    "pare_trace_reset": (None, [_P]),
}
