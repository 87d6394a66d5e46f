/// \file
/// The CPU ct runs on: its name, x86 family and model, and its cache sizes, detected once.
///
/// ct's blocking parameters (ct/core/tuning.hpp) are derived from these sizes at run time, so
/// a kernel sized for one machine's L1 is not run unchanged on another's; benchmarks print this
/// description beside every number.
#pragma once
#include <cstddef>
#include <string>

namespace ct {

/// Data cache sizes in bytes as one core sees them: its L1 data cache and L2, and the L3 it
/// shares with the cores of its complex (not the sum over a socket's complexes).
struct cache_sizes {
  /// Level-1 data cache.
  std::size_t l1d = 0;
  /// Level-2 cache.
  std::size_t l2 = 0;
  /// Level-3 cache shared by this core's complex; 0 when there is none or its size is unknown.
  std::size_t l3 = 0;
  /// Cache line.
  std::size_t line = 64;
  /// All four equal.
  friend bool operator==(const cache_sizes&, const cache_sizes&) = default;
};

/// Who made the CPU (CPUID leaf 0's vendor string). One budget follows the vendor rather
/// than the cache sizes: how far ahead a streamed read prefetches, because the vendors'
/// hardware prefetchers differ (ct/core/tuning.hpp, docs/tuning.md).
enum class cpu_vendor {
  /// Not x86, or a vendor string ct does not know.
  unknown,
  /// "AuthenticAMD".
  amd,
  /// "GenuineIntel".
  intel,
};

/// What ct found out about this machine's CPU.
struct machine_description {
  /// The processor's brand string ("AMD EPYC 9654 96-Core Processor"), or "unknown".
  std::string model_name;
  /// x86 family and model as lscpu shows them (family 25 = AMD Zen 3 / Zen 4); 0 off x86.
  int family = 0;
  /// x86 model within the family.
  int model = 0;
  /// The vendor; unknown off x86.
  cpu_vendor vendor = cpu_vendor::unknown;
  /// Cache sizes: from Linux's sysfs when it has them, else from CPUID leaf 4 (Intel) or
  /// 0x8000001D (AMD; when that is empty, AMD's 0x80000005 / 0x80000006), else the assumed
  /// 32 KiB / 512 KiB / 8 MiB.
  cache_sizes caches;
  /// Where caches came from: "sysfs", "cpuid" or "assumed".
  std::string caches_source;
};

namespace detail {
/// AMD's older cache-size leaves, used when leaf 0x8000001D is empty (as some hypervisors
/// leave it): L1d KiB in 0x80000005 ECX[31:24] and its line in ECX[7:0], L2 KiB in
/// 0x80000006 ECX[31:16]. The L3 is left 0 (unknown): 0x80000006 EDX gives the package's
/// total (508 MiB on a Zen 5 guest whose complexes have 32 MiB each), and budgets sized from
/// it would treat data as cached that is not. Zero where a leaf says nothing. Exposed for its
/// test.
cache_sizes caches_from_amd_size_leaves(unsigned l1_ecx, unsigned l2_ecx);
}  // namespace detail

/// The description of the CPU this process runs on, detected on first use (thread-safe).
const machine_description& this_machine();

/// One line for logs and benchmark records, e.g. "AMD EPYC, family 25 model 1, L1d 32 KiB,
/// L2 512 KiB, L3 32 MiB (sysfs)" ("L3 none or unknown" when l3 is 0).
std::string describe(const machine_description& m);

}  // namespace ct
