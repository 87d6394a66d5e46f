/// \file
/// Blocking parameters: the cache budgets ct's kernels size their blocks by, derived at run
/// time from this machine's caches (ct/core/machine.hpp), with an environment override for
/// experiments and a scope for tests.
///
/// The parameters change speed only. For a given tuning every result is bitwise the same
/// whatever the executor (CONTRACT §3); the GEMM kernels' results do not depend on the tuning
/// at all (each element is one sequential k sum, whatever the blocking).
#pragma once
#include <cstddef>
#include <string>

#include "ct/core/machine.hpp"

namespace ct {

/// What each budget is for, and how for_caches derives it (docs/tuning.md has the reasons).
struct tuning {
  /// The cache sizes the budgets below were derived from.
  cache_sizes caches;
  /// The CPU vendor they were derived for (only stream_ahead_bytes depends on it).
  cpu_vendor vendor = cpu_vendor::unknown;
  /// GEMM: one MR x KC micro-panel of A, which the micro-kernel re-reads for every B panel of
  /// a block, takes at most this (half of L1d, the rest for the B panel streaming past it);
  /// KC follows from it and the target's MR.
  std::size_t gemm_a_panel_bytes = 0;
  /// GEMM: one packed MC x KC block of A, re-read for every block of B panels, takes at most
  /// this (a quarter of L2); MC follows from it.
  std::size_t gemm_a_block_bytes = 0;
  /// GEMM: the KC x NC block of B panels that every micro-panel of an A block passes over
  /// takes at most this (half of L2, beside the A block); NC follows from it and KC. A packed B
  /// past this streams from L3 or memory in every range, so the product asks the executor for
  /// ranges of four row blocks (range_callback::grain).
  std::size_t gemm_b_block_bytes = 0;
  /// GEMM: a row-contiguous B of at most this many bytes is read in place instead of being
  /// packed first (half of L2: it stays there across the row blocks).
  std::size_t gemm_direct_b_bytes = 0;
  /// Matrix-vector products and encoded x * w^T: weight rows are taken in blocks of about this
  /// many bytes of per-row scratch (half of L2).
  std::size_t row_block_bytes = 0;
  /// Matrix-vector kernel: prefetch this far ahead in each weight row (L1d / 96, down to whole lines).
  std::size_t gemv_prefetch_bytes = 0;
  /// Encoded dot kernels: prefetch this far ahead (into L1) in each of the two runs of weight
  /// rows the row loops take in turns (L1d / 16).
  std::size_t weight_prefetch_bytes = 0;
  /// Encoded gemv (q4_0, q4_K rows): before each weight row, the next row's first bytes,
  /// up to this many, are prefetched into L2 in one burst (L1d / 4). Many requests in
  /// flight while the row is computed: memory then overlaps the arithmetic instead of taking
  /// turns with it (docs/tuning.md).
  std::size_t weight_burst_bytes = 0;
  /// Fused evaluation: a tile's inputs are prefetched this far ahead (L1d / 4).
  std::size_t stream_prefetch_bytes = 0;
  /// Reductions and row operations reading their input from memory (sum, max, min, argmax,
  /// argmin, logsumexp, layer and RMS norm rows): each read prefetches the line this far ahead
  /// of itself, in whole lines: half of L1d (the lines in flight must still be in L1 when the
  /// loop reaches them), an eighth of it on Intel CPUs, where a longer distance measured slower
  /// (docs/tuning.md; presumably their L2 prefetcher already runs ahead of such a stream).
  std::size_t stream_ahead_bytes = 0;
  /// Fused evaluation: results of at least this many bytes are written with non-temporal
  /// stores (half of L3 but at most 32 x L2, a large L3 being shared by many cores; 8 x L2
  /// without an L3: larger results cannot stay cached anyway).
  std::size_t stream_store_bytes = 0;
  /// Fused evaluation: per group, values a later pass needs (exp(x - max) in softmax) are kept
  /// up to this many bytes instead of being recomputed (half of L2).
  std::size_t row_cache_bytes = 0;

  /// The budgets for these cache sizes and this vendor by the rules above; sizes of 0 are
  /// taken as the assumed 32 KiB / 512 KiB / 8 MiB, and every budget is at least one cache line.
  static tuning for_caches(const cache_sizes& c, cpu_vendor v = cpu_vendor::unknown);
  /// All fields equal.
  friend bool operator==(const tuning&, const tuning&) = default;
};

/// The tuning of this process: for_caches(this_machine().caches, this_machine().vendor), then
/// the CT_TUNING environment variable, read once. CT_TUNING is a comma-separated list of
/// name=size, sizes in bytes with an optional K, M or G suffix (powers of 1024): l1d, l2 and l3
/// replace the detected sizes before the budgets are derived (for the same vendor); the others
/// (gemm_a_panel, gemm_a_block, gemm_b_block, gemm_direct_b, row_block, gemv_prefetch,
/// weight_prefetch, weight_burst, stream_prefetch, stream_ahead, stream_store, row_cache) then
/// replace one budget. Example: CT_TUNING=l1d=48K,gemm_a_block=256K.
/// Throws ct::tuning_error (naming the entry) on first use when CT_TUNING does not parse.
const tuning& process_tuning();

/// Parses a CT_TUNING value over base (exposed for tests and tools); throws ct::tuning_error.
tuning parse_tuning(const std::string& spec, const tuning& base);

struct settings;  // ct/exec/settings.hpp

/// The tuning a set of settings carries: its tuning_scope's, else process_tuning().
const tuning& tuning_of(const settings& s);

/// The tuning in force on this thread: tuning_of(current_settings()). Operations capture it at
/// the call site with the other settings (ct/exec/settings.hpp).
const tuning& current_tuning();

/// Binds a tuning for the current thread until destroyed (the previous one returns). The
/// tuning is copied; destroy scopes on their thread, in reverse order of creation.
class tuning_scope {
 public:
  /// Binds t on this thread.
  explicit tuning_scope(const tuning& t);
  /// Brings back the binding in force before.
  ~tuning_scope();
  /// Not copyable: each binding belongs to one scope.
  tuning_scope(const tuning_scope&) = delete;
  /// Not assignable.
  tuning_scope& operator=(const tuning_scope&) = delete;

 private:
  tuning own_;
  const tuning* previous_;
};

/// The GEMM blocking the SIMD backend uses for one element type under a tuning on this CPU's
/// dispatched target: micro-tile MR x NR, KC steps of k per block, MC rows per A block, NC
/// columns per block of B panels.
struct gemm_blocking {
  /// Rows of the register tile.
  std::size_t mr = 0;
  /// Columns of the register tile (two vectors).
  std::size_t nr = 0;
  /// Steps of k per packed block.
  std::size_t kc = 0;
  /// Rows per packed block of A (a multiple of mr).
  std::size_t mc = 0;
  /// Columns per block of B panels (a multiple of nr).
  std::size_t nc = 0;
};
/// gemm_blocking for float32 (or float64 when f64) under tuning t.
gemm_blocking gemm_blocking_for(const tuning& t, bool f64 = false);

/// One line naming every budget, e.g. "L1d 32K L2 512K L3 32M | gemm_a_panel 16K ...".
std::string describe(const tuning& t);

}  // namespace ct
