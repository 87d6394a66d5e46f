// src/core/machine.cpp — ct::this_machine(): the CPU's name, family, model and caches.
#include "ct/core/machine.hpp"

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define CT_HAVE_CPUID 1
#endif

namespace ct {

namespace detail {

cache_sizes caches_from_amd_size_leaves(unsigned l1_ecx, unsigned l2_ecx) {
  cache_sizes c;
  c.l1d = std::size_t{(l1_ecx >> 24) & 0xFF} << 10;   // KiB in bits 31:24
  c.l2 = std::size_t{(l2_ecx >> 16) & 0xFFFF} << 10;  // KiB in bits 31:16
  c.l3 = 0;  // 0x80000006 EDX is the package's L3, not this core's complex's: unknown
  const std::size_t line = l1_ecx & 0xFF;             // bytes in bits 7:0
  c.line = line != 0 ? line : 64;
  return c;
}

}  // namespace detail

namespace {

// "32K" / "512K" / "32768K" / "1M" as sysfs writes sizes; 0 when unreadable.
std::size_t parse_sysfs_size(const std::string& text) {
  std::size_t value = 0;
  std::size_t i = 0;
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) value = value * 10 + static_cast<std::size_t>(text[i] - '0');
  if (i == 0) return 0;
  if (i < text.size() && (text[i] == 'K' || text[i] == 'k')) value <<= 10;
  else if (i < text.size() && text[i] == 'M') value <<= 20;
  return value;
}

std::string read_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (in) std::getline(in, line);
  return line;
}

// Linux: /sys/devices/system/cpu/cpu0/cache/index*/ (level, type, size, coherency_line_size).
bool caches_from_sysfs(cache_sizes& c) {
  cache_sizes found;
  bool any = false;
  for (int index = 0; index < 16; ++index) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/";
    const std::string level = read_line(dir + "level");
    if (level.empty()) break;
    const std::string type = read_line(dir + "type");
    const std::size_t size = parse_sysfs_size(read_line(dir + "size"));
    if (size == 0 || type == "Instruction") continue;
    if (level == "1") found.l1d = size;
    else if (level == "2") found.l2 = size;
    else if (level == "3") found.l3 = size;
    else continue;
    const std::size_t line = parse_sysfs_size(read_line(dir + "coherency_line_size"));
    if (line != 0) found.line = line;
    any = true;
  }
  if (!any || found.l1d == 0) return false;
  c = found;
  return true;
}

#ifdef CT_HAVE_CPUID
// The vendor from CPUID leaf 0's string (EBX, EDX, ECX).
cpu_vendor vendor_from_cpuid() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(0, &a, &b, &c, &d)) return cpu_vendor::unknown;
  char vendor[13] = {};
  std::memcpy(vendor, &b, 4);
  std::memcpy(vendor + 4, &d, 4);
  std::memcpy(vendor + 8, &c, 4);
  if (std::strcmp(vendor, "AuthenticAMD") == 0) return cpu_vendor::amd;
  if (std::strcmp(vendor, "GenuineIntel") == 0) return cpu_vendor::intel;
  return cpu_vendor::unknown;
}

// Deterministic cache parameters: Intel's leaf 4, AMD's 0x8000001D (same layout). The L3 is
// the one this core's complex shares, as sysfs reports it.
bool caches_from_cpuid(cache_sizes& c, cpu_vendor vendor) {
  unsigned a = 0, b = 0, cx = 0, d = 0;
  unsigned leaf = 4;
  if (vendor == cpu_vendor::amd) {
    leaf = 0x8000001D;
    if (static_cast<unsigned>(__get_cpuid_max(0x80000000, nullptr)) < leaf) return false;
  } else if (static_cast<unsigned>(__get_cpuid_max(0, nullptr)) < 4) {
    return false;
  }
  cache_sizes found;
  bool any = false;
  for (unsigned sub = 0; sub < 16; ++sub) {
    __cpuid_count(leaf, sub, a, b, cx, d);
    const unsigned type = a & 0x1F;  // 0: no more caches, 1: data, 2: instruction, 3: unified
    if (type == 0) break;
    if (type == 2) continue;
    const unsigned level = (a >> 5) & 0x7;
    const std::size_t ways = ((b >> 22) & 0x3FF) + 1, partitions = ((b >> 12) & 0x3FF) + 1,
                      line = (b & 0xFFF) + 1, sets = std::size_t{cx} + 1;
    const std::size_t size = ways * partitions * line * sets;
    if (level == 1) found.l1d = size;
    else if (level == 2) found.l2 = size;
    else if (level == 3) found.l3 = size;
    else continue;
    found.line = line;
    any = true;
  }
  if (!any || found.l1d == 0) {
    // Some hypervisors leave 0x8000001D empty (an Oxide Zen 5 guest did) but fill AMD's
    // older size leaves.
    if (leaf != 0x8000001D || static_cast<unsigned>(__get_cpuid_max(0x80000000, nullptr)) < 0x80000006u) return false;
    unsigned l1_ecx = 0, l2_ecx = 0;
    __cpuid(0x80000005, a, b, l1_ecx, d);
    __cpuid(0x80000006, a, b, l2_ecx, d);
    found = detail::caches_from_amd_size_leaves(l1_ecx, l2_ecx);
    if (found.l1d == 0) return false;
  }
  c = found;
  return true;
}

void identify(machine_description& m) {
  unsigned a = 0, b = 0, c = 0, d = 0;
  m.vendor = vendor_from_cpuid();
  if (__get_cpuid(1, &a, &b, &c, &d)) {
    const int base_family = static_cast<int>((a >> 8) & 0xF), base_model = static_cast<int>((a >> 4) & 0xF);
    m.family = base_family == 0xF ? base_family + static_cast<int>((a >> 20) & 0xFF) : base_family;
    m.model = base_family == 0x6 || base_family == 0xF ? base_model + (static_cast<int>((a >> 16) & 0xF) << 4) : base_model;
  }
  if (static_cast<unsigned>(__get_cpuid_max(0x80000000, nullptr)) >= 0x80000004u) {
    unsigned regs[12];
    for (unsigned i = 0; i < 3; ++i) __get_cpuid(0x80000002 + i, &regs[4 * i], &regs[4 * i + 1], &regs[4 * i + 2], &regs[4 * i + 3]);
    char brand[49] = {};
    std::memcpy(brand, regs, 48);
    std::string name(brand);
    const auto first = name.find_first_not_of(' ');
    const auto last = name.find_last_not_of(' ');
    if (first != std::string::npos) m.model_name = name.substr(first, last - first + 1);
  }
}
#endif

machine_description detect() {
  machine_description m;
  m.model_name = "unknown";
#ifdef CT_HAVE_CPUID
  identify(m);
#endif
  if (caches_from_sysfs(m.caches)) {
    m.caches_source = "sysfs";
#ifdef CT_HAVE_CPUID
  } else if (caches_from_cpuid(m.caches, m.vendor)) {
    m.caches_source = "cpuid";
#endif
  } else {
    m.caches = cache_sizes{32 << 10, 512 << 10, 8 << 20, 64};
    m.caches_source = "assumed";
  }
  return m;
}

std::string kib(std::size_t bytes) {
  if (bytes >= (1u << 20) && bytes % (1u << 20) == 0) return std::to_string(bytes >> 20) + " MiB";
  return std::to_string(bytes >> 10) + " KiB";
}

}  // namespace

const machine_description& this_machine() {
  static const machine_description m = detect();
  return m;
}

std::string describe(const machine_description& m) {
  std::string s = m.model_name + ", family " + std::to_string(m.family) + " model " + std::to_string(m.model);
  s += ", L1d " + kib(m.caches.l1d) + ", L2 " + kib(m.caches.l2) + ", L3 " + (m.caches.l3 ? kib(m.caches.l3) : std::string("none or unknown"));
  s += " (" + m.caches_source + ")";
  return s;
}

}  // namespace ct
