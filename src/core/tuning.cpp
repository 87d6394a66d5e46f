// src/core/tuning.cpp — the budgets of ct/core/tuning.hpp: derived from the caches, CT_TUNING,
// and the per-thread binding (a field of ct::settings, so operations carry it to their
// callbacks like the backend).
#include "ct/core/tuning.hpp"

#include <algorithm>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "ct/core/error.hpp"
#include "ct/exec/settings.hpp"
#include "src/kernels/target_control.hpp"

namespace ct {
namespace detail {
void bind_settings(const settings& s) noexcept;  // src/exec/bindings.cpp
}

namespace {

struct field {
  const char* name;
  std::size_t tuning::*member;
};
// The budgets CT_TUNING can set one by one (l1d, l2, l3 are handled before these).
constexpr field budget_fields[] = {
    {"gemm_a_panel", &tuning::gemm_a_panel_bytes},   {"gemm_a_block", &tuning::gemm_a_block_bytes},
    {"gemm_b_block", &tuning::gemm_b_block_bytes},
    {"gemm_direct_b", &tuning::gemm_direct_b_bytes}, {"row_block", &tuning::row_block_bytes},
    {"gemv_prefetch", &tuning::gemv_prefetch_bytes}, {"weight_prefetch", &tuning::weight_prefetch_bytes},
    {"weight_burst", &tuning::weight_burst_bytes},
    {"stream_prefetch", &tuning::stream_prefetch_bytes}, {"stream_ahead", &tuning::stream_ahead_bytes},
    {"stream_store", &tuning::stream_store_bytes},
    {"row_cache", &tuning::row_cache_bytes},
};

[[noreturn]] void bad_entry(const std::string& spec, const std::string& entry, const std::string& why) {
  throw tuning_error("ct::parse_tuning: entry '" + entry + "' of \"" + spec + "\": " + why +
                     " (expected name=size, size in bytes with an optional K, M or G suffix; names: l1d, l2, l3, "
                     "gemm_a_panel, gemm_a_block, gemm_b_block, gemm_direct_b, row_block, gemv_prefetch, weight_prefetch, weight_burst, "
                     "stream_prefetch, stream_ahead, stream_store, row_cache)");
}

std::size_t parse_size(const std::string& spec, const std::string& entry, const std::string& text) {
  if (text.empty()) bad_entry(spec, entry, "no size after '='");
  std::size_t value = 0, i = 0;
  constexpr std::size_t limit = std::size_t{1} << 40;  // 1 TiB: larger is a typo, not a cache
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
    value = value * 10 + static_cast<std::size_t>(text[i] - '0');
    if (value > limit) bad_entry(spec, entry, "size larger than 1 TiB");
  }
  if (i == 0) bad_entry(spec, entry, "size is not a number");
  if (i + 1 == text.size()) {
    const char unit = text[i];
    const int shift = unit == 'K' || unit == 'k' ? 10 : unit == 'M' || unit == 'm' ? 20 : unit == 'G' || unit == 'g' ? 30 : -1;
    if (shift < 0) bad_entry(spec, entry, std::string("unknown unit '") + unit + "'");
    value <<= shift;
  } else if (i != text.size()) {
    bad_entry(spec, entry, "trailing characters after the size");
  }
  if (value == 0) bad_entry(spec, entry, "size 0");
  if (value > limit) bad_entry(spec, entry, "size larger than 1 TiB");
  return value;
}

std::string short_size(std::size_t bytes) {
  if (bytes >= (std::size_t{1} << 30) && bytes % (std::size_t{1} << 30) == 0) return std::to_string(bytes >> 30) + "G";
  if (bytes >= (std::size_t{1} << 20) && bytes % (std::size_t{1} << 20) == 0) return std::to_string(bytes >> 20) + "M";
  if (bytes >= 1024 && bytes % 1024 == 0) return std::to_string(bytes >> 10) + "K";
  return std::to_string(bytes);
}

tuning make_process_tuning() {
  // The first operation also settles which simd target the kernels run (CT_SIMD_TARGET), so
  // that a bad value is reported like a bad CT_TUNING: before any work.
  detail::kernels::simd_apply_target_override();
  const tuning base = tuning::for_caches(this_machine().caches, this_machine().vendor);
  const char* env = std::getenv("CT_TUNING");
  if (env == nullptr || *env == '\0') return base;
  try {
    return parse_tuning(env, base);
  } catch (const tuning_error& e) {
    throw tuning_error(std::string("the CT_TUNING environment variable: ") + e.what());
  }
}

}  // namespace

tuning tuning::for_caches(const cache_sizes& given, cpu_vendor vendor) {
  cache_sizes c = given;
  if (c.line == 0) c.line = 64;
  if (c.l1d == 0) c.l1d = 32 << 10;
  if (c.l2 == 0) c.l2 = 512 << 10;
  tuning t;
  t.caches = c;
  t.vendor = vendor;
  const auto at_least_a_line = [&](std::size_t v) { return std::max(v, c.line); };
  // Why these fractions: docs/tuning.md. At 32 KiB / 512 KiB / 32 MiB they give the values the
  // kernels were measured best with on Zen 3 (KC 256 for AVX2 floats, 256 KiB direct B and row
  // blocks, 8 KiB tile prefetch, 16 MiB streaming). The GEMV prefetch (L1d / 96, 512 B at 48
  // KiB) and the weight prefetch (L1d / 16, 3 KiB at 48 KiB, per run of rows now that the
  // encoded row loops take two runs in turns; 4 KiB on Zen 3 with one run) were measured best
  // on a Xeon guest instead (docs/tuning.md).
  t.gemm_a_panel_bytes = at_least_a_line(c.l1d / 2);
  t.gemm_a_block_bytes = at_least_a_line(c.l2 / 4);
  t.gemm_b_block_bytes = at_least_a_line(c.l2 / 2);
  t.gemm_direct_b_bytes = at_least_a_line(c.l2 / 2);
  t.row_block_bytes = at_least_a_line(c.l2 / 2);
  t.gemv_prefetch_bytes = at_least_a_line(c.l1d / 96 / c.line * c.line);  // whole lines
  t.weight_prefetch_bytes = at_least_a_line(c.l1d / 16);  // per run of rows: two runs at once (docs/tuning.md)
  t.weight_burst_bytes = at_least_a_line(c.l1d / 4);
  t.stream_prefetch_bytes = at_least_a_line(c.l1d / 4);
  // 16 KiB at a 32 KiB L1d, the distance row sums and argmax were measured best with on Zen 3
  // (docs/tuning.md); whole lines, as the kernels prefetch line by line. On an Intel core
  // (Xeon, family 6 model 207, 48 KiB L1d) every streamed row operation was fastest at 6 KiB
  // and 4-25% slower at 24 KiB. Our reading: its L2 streamer runs ahead of such a stream by
  // itself, so a software prefetch far ahead only takes an L1 miss buffer for a trip to memory.
  const std::size_t ahead = vendor == cpu_vendor::intel ? c.l1d / 8 : c.l1d / 2;
  t.stream_ahead_bytes = at_least_a_line(ahead / c.line * c.line);
  // Half the L3, but no more than 32 L2s: a large L3 is shared by many cores (an Intel Xeon
  // reports 480 MiB), and a 64 MiB softmax written through the cache there took 9.6-11.5 ms
  // against 7.3-7.7 streamed (docs/tuning.md). 32 x L2 is L3 / 2 on Zen 3, 4 and 5.
  t.stream_store_bytes = at_least_a_line(c.l3 != 0 ? std::min(c.l3 / 2, c.l2 * 32) : c.l2 * 8);
  t.row_cache_bytes = at_least_a_line(c.l2 / 2);
  return t;
}

tuning parse_tuning(const std::string& spec, const tuning& base) {
  cache_sizes caches = base.caches;
  bool caches_changed = false;
  std::vector<std::pair<std::size_t tuning::*, std::size_t>> budgets;  // applied after the caches
  std::size_t pos = 0;
  while (pos <= spec.size()) {
    const std::size_t comma = std::min(spec.find(',', pos), spec.size());
    const std::string entry = spec.substr(pos, comma - pos);
    pos = comma + 1;
    if (entry.empty()) {
      if (comma == spec.size()) break;
      bad_entry(spec, entry, "empty entry");
    }
    const std::size_t eq = entry.find('=');
    if (eq == std::string::npos) bad_entry(spec, entry, "no '='");
    const std::string name = entry.substr(0, eq);
    const std::size_t value = parse_size(spec, entry, entry.substr(eq + 1));
    if (name == "l1d" || name == "l2" || name == "l3") {
      (name == "l1d" ? caches.l1d : name == "l2" ? caches.l2 : caches.l3) = value;
      caches_changed = true;
      continue;
    }
    const auto f = std::find_if(std::begin(budget_fields), std::end(budget_fields),
                                [&](const field& x) { return name == x.name; });
    if (f == std::end(budget_fields)) bad_entry(spec, entry, "unknown name '" + name + "'");
    budgets.emplace_back(f->member, value);
  }
  tuning t = caches_changed ? tuning::for_caches(caches, base.vendor) : base;
  for (const auto& [member, value] : budgets) t.*member = value;
  return t;
}

const tuning& process_tuning() {
  static const tuning t = make_process_tuning();
  return t;
}

const tuning& tuning_of(const settings& s) {
  if (s.tuning == nullptr) return process_tuning();
  detail::kernels::simd_apply_target_override();  // also under a tuning_scope (a static's check)
  return *s.tuning;
}

const tuning& current_tuning() { return tuning_of(current_settings()); }

tuning_scope::tuning_scope(const tuning& t) : own_(t), previous_(current_settings().tuning) {
  settings s = current_settings();
  s.tuning = &own_;
  detail::bind_settings(s);
}

tuning_scope::~tuning_scope() {
  settings s = current_settings();
  s.tuning = previous_;
  detail::bind_settings(s);
}

std::string describe(const tuning& t) {
  std::string s = "L1d " + short_size(t.caches.l1d) + " L2 " + short_size(t.caches.l2) + " L3 " +
                  (t.caches.l3 != 0 ? short_size(t.caches.l3) : std::string("none or unknown")) + " |";
  for (const field& f : budget_fields) s += std::string(" ") + f.name + " " + short_size(t.*(f.member));
  return s;
}

}  // namespace ct
