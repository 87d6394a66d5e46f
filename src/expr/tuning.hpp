// src/expr/tuning.hpp — the evaluator's measured constants, each with the reason for its
// value (the measurements in full: docs/performance.md).
#pragma once
#include <cstddef>

#include "ct/core/index.hpp"

namespace ct::detail {
namespace [[gnu::visibility("hidden")]] evaluator {  // see plan.hpp

// Elements per tile: a float tile is 4 KiB, a double one 8 KiB. Plain row reductions keep
// this cut too: whole-row kernel calls made sum and argmax of 4096x4096 4-6% slower.
constexpr index_t max_tile = 1024;

// Column walk: retained elements read per reduced position. Long stretches keep the hardware
// prefetchers streaming (sum over axis 0 of 4096x4096 f32: 24 -> 7 ms from 1024 to 4096 with
// a scalar accumulate loop; with the prefetch below, 2048 was twice as slow as 4096). The
// double accumulators (32 KiB) fit L1.
constexpr index_t max_column_block = 4096;
// Column walk: the stretch this many reduced positions ahead is prefetched (sum over axis 0
// of 4096x4096 f32: 4.0 -> 3.0-3.6 ms).
constexpr index_t column_prefetch_rows = 4;

// Results of at least the tuning's stream_store_bytes (ct/core/tuning.hpp: half of L3) are
// written with non-temporal stores (when contiguous along the walk): they cannot stay cached for
// their reader anyway, and not reading the destination lines first cut a 64 MiB softmax 9.9 ->
// 9.1 ms, a 32 MiB layer norm 5.5 -> 4.5 ms (Zen 3, 32 MiB L3: 16 MiB then).
// ... and only with tiles of at least this many bytes: with 256-byte tiles (layer norm of
// 65536x64) streaming made the evaluation 25% slower.
constexpr index_t stream_min_tile = 4096;

// Burst prefetch before a tile, the tuning's stream_prefetch_bytes ahead (L1d / 4: 8 KiB on a
// 32 KiB L1): between two kernel calls the hardware prefetchers lose the stream (row argmax of
// 4096x4096 f32: 3.8 -> 1.8 ms). 4 and 16 KiB measured within noise; 64 KiB and L2/L3-only hints
// were slower. Rows shorter than this are not prefetched for the next group by a later pass: the
// first pass's own prefetch already reaches them (layer norm 8192x1024 was 5% slower with both).
//
// Row cache: the tuning's row_cache_bytes (half of L2) per group of values kept for a later pass
// instead of recomputed (exp(x - max) in softmax, x - mean in layer norm); values that do not
// fit are recomputed.

// Split elementwise evaluation (opt-in, settings::split_elementwise): expressions of at least
// split_min_elements positions, in boxes of about split_box_elements, at most max_split_boxes
// (one plan each, built before scheduling). A box streams its stores when the whole result is
// large enough (plan::whole_result_elements), not by its own size: 1 MiB boxes of a 64 MiB
// a*b+c used ordinary stores, which read every destination line first (2 workers 4.1-4.9 ms
// against 3.5-4.0 streamed; docs/performance.md). Boxes of 2^20 elements measured the same.
constexpr index_t split_min_elements = index_t{1} << 20;
constexpr index_t split_box_elements = index_t{1} << 18;
constexpr index_t max_split_boxes = 64;

}  // namespace evaluator
}  // namespace ct::detail
