#pragma once
// The innermost numeric loops in the sanitizer build.
//
// AddressSanitizer checks every load and store and UBSan every pointer and index
// computation; in the decoder's GEMV tiles, attention's score and value loops, softmax,
// GELU and layer norm that made the model tests 3-6x slower than in the release build
// (GoldenDecoding.BeamSearchFive: 3.5 s released, 20 s sanitized, 56 % of it in one GEMV
// tile). Those loops are compiled without instrumentation (HARK_UNINSTRUMENTED), and the
// function that calls them checks once, before the loop, that every span the loop will read
// or write lies in addressable memory (check_span). A span that does not is reported by
// AddressSanitizer as usual, at its first bad byte, with the allocation's and the caller's
// stacks. What is lost is only finer than a span: a loop that stays inside its spans but
// computes a wrong index within them, which the numeric tests catch as wrong results.
// Outside a sanitizer build both are nothing.
#include <cstddef>
#include <cstdint>

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HARK_ADDRESS_SANITIZER 1
#endif
#endif
#if !defined(HARK_ADDRESS_SANITIZER) && defined(__SANITIZE_ADDRESS__)
#define HARK_ADDRESS_SANITIZER 1
#endif

#if defined(HARK_ADDRESS_SANITIZER)
#include <sanitizer/asan_interface.h>
// A sanitized function is not inlined into an unsanitized one, and an uninlined std::max()
// or load8() per vector would cost more than the checks it saves: `flatten` inlines the
// kernel's direct calls regardless (the standard library's small functions), and the
// kernel's own helpers carry this attribute too, so they inline into it as usual.
#define HARK_UNINSTRUMENTED __attribute__((no_sanitize("address", "undefined"), flatten))
#else
#define HARK_UNINSTRUMENTED
#endif

namespace hark {

#if defined(HARK_ADDRESS_SANITIZER)
namespace detail {
// An instrumented read of the first unaddressable byte: AddressSanitizer reports it
// (heap-buffer-overflow, heap-use-after-free, ...) and stops.
[[gnu::noinline]] inline void report_unaddressable(const void* bad) {
  const volatile char* byte = static_cast<const volatile char*>(bad);
  static_cast<void>(*byte);
}
}  // namespace detail

// Checks that [p, p + count) is addressable memory; reports the first byte that is not.
template <class T>
inline void check_span(const T* p, int64_t count) {
  if (count <= 0) return;
  const size_t bytes = static_cast<size_t>(count) * sizeof(T);
  if (void* bad = __asan_region_is_poisoned(const_cast<void*>(static_cast<const void*>(p)), bytes))
    detail::report_unaddressable(bad);
}
#else
template <class T>
inline void check_span(const T*, int64_t) {}
#endif

// The span a strided loop touches: `rows` rows of `width` elements, row i starting at
// p + i * stride (a head's slice of a K or V cache, a tile of weight rows).
template <class T>
inline void check_strided(const T* p, int64_t rows, int64_t stride, int64_t width) {
  if (rows > 0 && width > 0) check_span(p, (rows - 1) * stride + width);
}

}  // namespace hark
