// The format registry: the built-in rows first, then those a program registers. A deque keeps
// every registered block_format at its address, so a ct::format handle (a pointer to it) stays
// valid as more are added. Registration is documented as not concurrent with other calls, so
// lookups take no lock.
#include <deque>
#include <string>

#include "ct/encoded/format.hpp"
#include "src/encoded/builtin.hpp"

namespace ct {

namespace {

std::deque<block_format>& registry() {
  static std::deque<block_format> r = [] {
    using namespace detail::encoded;
    std::deque<block_format> b;
    b.push_back({"q8_0", q8_0_elements, q8_0_bytes, &encode_q8_0, &decode_q8_0});
    b.push_back({"q4_0", q4_0_elements, q4_0_bytes, &encode_q4_0, &decode_q4_0});
    b.push_back({"bf16", 1, 2, &encode_bf16, &decode_bf16});
    b.push_back({"f16", 1, 2, &encode_f16, &decode_f16});
    b.push_back({"q4_K", q4_K_elements, q4_K_bytes, &encode_q4_K, &decode_q4_K});
    b.push_back({"q6_K", q6_K_elements, q6_K_bytes, &encode_q6_K, &decode_q6_K});
    return b;
  }();
  return r;
}

std::string known_names() {
  std::string s;
  for (const block_format& f : registry()) s += (s.empty() ? "" : ", ") + f.name;
  return s;
}

bool valid_name(const std::string& n) {
  if (n.empty()) return false;
  for (char c : n)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_')) return false;
  return true;
}

}  // namespace

std::size_t format::row_bytes(index_t k) const {
  if (k < 0 || k % block_elements() != 0)
    throw format_error("format " + name() + ": a row of " + std::to_string(k) + " values is not a whole number of its " +
                       std::to_string(block_elements()) + "-value blocks");
  return static_cast<std::size_t>(k / block_elements()) * static_cast<std::size_t>(block_bytes());
}

format find_format(std::string_view name) {
  for (const block_format& f : registry())
    if (f.name == name) return format(&f);
  throw format_error("ct::find_format: no format named '" + std::string(name) + "' (known: " + known_names() + ")");
}

format register_format(block_format traits) {
  if (!valid_name(traits.name))
    throw format_error("ct::register_format: the name '" + traits.name + "' must be non-empty letters, digits and '_'");
  for (const block_format& f : registry())
    if (f.name == traits.name) throw format_error("ct::register_format: a format named '" + traits.name + "' exists already");
  if (traits.block_elements < 1 || traits.block_bytes < 1)
    throw format_error("ct::register_format: format '" + traits.name + "' needs block_elements >= 1 and block_bytes >= 1, got " +
                       std::to_string(traits.block_elements) + " and " + std::to_string(traits.block_bytes));
  if (traits.encode_row == nullptr || traits.decode_row == nullptr)
    throw format_error("ct::register_format: format '" + traits.name + "' needs both encode_row and decode_row");
  registry().push_back(std::move(traits));
  return format(&registry().back());
}

std::vector<std::string> format_names() {
  std::vector<std::string> names;
  for (const block_format& f : registry()) names.push_back(f.name);
  return names;
}

}  // namespace ct
