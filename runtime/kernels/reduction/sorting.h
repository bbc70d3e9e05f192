#pragma once
// libstdc++'s sorting algorithms, step for step (bits/stl_algo.h and
// bits/stl_heap.h): sort, partial_sort and nth_element.
//
// PyTorch's CPU sort and topk kernels run these over (value, index) pairs
// compared by value only, so which of several equal values comes first is
// whatever these exact sequences of comparisons and moves leave: an
// introsort, a heap select, an introselect. Repeating them gives PyTorch's
// tie order, which no other algorithm of the same complexity would. Each
// function names the libstdc++ function it repeats; keep them identical.
//
// E is the element type (copied by value), Less a strict weak order on E.

#include "runtime/core/compiler.h"

namespace pare {
namespace kernels {
namespace sorting {

// _S_threshold: introsort leaves ranges this short to insertion sort.
constexpr int64_t kInsertionThreshold = 16;

// libstdc++ __lg: floor(log2(n)) for n > 0.
inline int64_t floor_log2(int64_t n) { return 63 - __builtin_clzll(static_cast<unsigned long long>(n)); }

template <typename E>
PARE_ALWAYS_INLINE void swap_elements(E* a, E* b) {
  E t = *a;
  *a = *b;
  *b = t;
}

// libstdc++ __push_heap
template <typename E, typename Less>
void push_heap(E* first, int64_t hole, int64_t top, E value, const Less& less) {
  int64_t parent = (hole - 1) / 2;
  while (hole > top && less(first[parent], value)) {
    first[hole] = first[parent];
    hole = parent;
    parent = (hole - 1) / 2;
  }
  first[hole] = value;
}

// libstdc++ __adjust_heap
template <typename E, typename Less>
void adjust_heap(E* first, int64_t hole, int64_t len, E value, const Less& less) {
  const int64_t top = hole;
  int64_t child = hole;
  while (child < (len - 1) / 2) {
    child = 2 * (child + 1);
    if (less(first[child], first[child - 1])) --child;
    first[hole] = first[child];
    hole = child;
  }
  if ((len & 1) == 0 && child == (len - 2) / 2) {
    child = 2 * (child + 1);
    first[hole] = first[child - 1];
    hole = child - 1;
  }
  push_heap(first, hole, top, value, less);
}

// libstdc++ __pop_heap: *result goes into the heap [first, last), the heap's top to *result.
template <typename E, typename Less>
void pop_heap(E* first, E* last, E* result, const Less& less) {
  const E value = *result;
  *result = *first;
  adjust_heap(first, 0, last - first, value, less);
}

// libstdc++ __make_heap
template <typename E, typename Less>
void make_heap(E* first, E* last, const Less& less) {
  const int64_t len = last - first;
  if (len < 2) return;
  for (int64_t parent = (len - 2) / 2;; --parent) {
    adjust_heap(first, parent, len, first[parent], less);
    if (parent == 0) return;
  }
}

// libstdc++ __heap_select
template <typename E, typename Less>
void heap_select(E* first, E* middle, E* last, const Less& less) {
  make_heap(first, middle, less);
  for (E* i = middle; i < last; ++i) {
    if (less(*i, *first)) pop_heap(first, middle, i, less);
  }
}

// libstdc++ partial_sort (__partial_sort): the middle - first least
// elements, in order, in [first, middle).
template <typename E, typename Less>
void partial_sort(E* first, E* middle, E* last, const Less& less) {
  heap_select(first, middle, last, less);
  while (middle - first > 1) {  // libstdc++ __sort_heap
    --middle;
    pop_heap(first, middle, middle, less);
  }
}

// libstdc++ __unguarded_linear_insert
template <typename E, typename Less>
void unguarded_linear_insert(E* last, const Less& less) {
  const E value = *last;
  E* next = last - 1;
  while (less(value, *next)) {
    *last = *next;
    last = next;
    --next;
  }
  *last = value;
}

// libstdc++ __insertion_sort
template <typename E, typename Less>
void insertion_sort(E* first, E* last, const Less& less) {
  if (first == last) return;
  for (E* i = first + 1; i != last; ++i) {
    if (less(*i, *first)) {
      const E value = *i;
      for (E* p = i; p != first; --p) *p = p[-1];
      *first = value;
    } else {
      unguarded_linear_insert(i, less);
    }
  }
}

// libstdc++ __move_median_to_first
template <typename E, typename Less>
void move_median_to_first(E* result, E* a, E* b, E* c, const Less& less) {
  if (less(*a, *b)) {
    if (less(*b, *c)) {
      swap_elements(result, b);
    } else if (less(*a, *c)) {
      swap_elements(result, c);
    } else {
      swap_elements(result, a);
    }
  } else if (less(*a, *c)) {
    swap_elements(result, a);
  } else if (less(*b, *c)) {
    swap_elements(result, c);
  } else {
    swap_elements(result, b);
  }
}

// libstdc++ __unguarded_partition_pivot (with __unguarded_partition)
template <typename E, typename Less>
E* unguarded_partition_pivot(E* first, E* last, const Less& less) {
  move_median_to_first(first, first + 1, first + (last - first) / 2, last - 1, less);
  const E* pivot = first;
  E* lo = first + 1;
  E* hi = last;
  while (true) {
    while (less(*lo, *pivot)) ++lo;
    --hi;
    while (less(*pivot, *hi)) --hi;
    if (!(lo < hi)) return lo;
    swap_elements(lo, hi);
    ++lo;
  }
}

// libstdc++ __introsort_loop. Recursion depth is at most depth_limit (2 log2 n).
template <typename E, typename Less>
void introsort_loop(E* first, E* last, int64_t depth_limit, const Less& less) {
  while (last - first > kInsertionThreshold) {
    if (depth_limit == 0) {
      partial_sort(first, last, last, less);
      return;
    }
    --depth_limit;
    E* cut = unguarded_partition_pivot(first, last, less);
    introsort_loop(cut, last, depth_limit, less);
    last = cut;
  }
}

// libstdc++ sort (__sort and __final_insertion_sort)
template <typename E, typename Less>
void sort(E* first, E* last, const Less& less) {
  if (first == last) return;
  introsort_loop(first, last, floor_log2(last - first) * 2, less);
  if (last - first > kInsertionThreshold) {
    insertion_sort(first, first + kInsertionThreshold, less);
    for (E* i = first + kInsertionThreshold; i != last; ++i) unguarded_linear_insert(i, less);
  } else {
    insertion_sort(first, last, less);
  }
}

// libstdc++ nth_element (__introselect)
template <typename E, typename Less>
void nth_element(E* first, E* nth, E* last, const Less& less) {
  if (first == last || nth == last) return;
  int64_t depth_limit = floor_log2(last - first) * 2;
  while (last - first > 3) {
    if (depth_limit == 0) {
      heap_select(first, nth + 1, last, less);
      swap_elements(first, nth);  // the nth element into its final place
      return;
    }
    --depth_limit;
    E* cut = unguarded_partition_pivot(first, last, less);
    if (cut <= nth) {
      first = cut;
    } else {
      last = cut;
    }
  }
  insertion_sort(first, last, less);
}

}  // namespace sorting
}  // namespace kernels
}  // namespace pare
