// Operation selectors: the registries, the thread-local scopes, the lookup order and the
// staged run of a selected kernel (ct/select/selector.hpp).
#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "ct/core/error.hpp"
#include "src/select/select.hpp"

namespace ct {

const char* operation_name(operation op) noexcept {
  switch (op) {
    case operation::matmul: return "matmul";
    case operation::dot: return "dot";
    case operation::encoded_matmul: return "encoded_matmul";
    case operation::eval: return "eval";
    case operation::decode: return "decode";
  }
  return "?";
}

std::string operand_view::type_name() const { return encoding ? encoding->name() : dtype_name(type); }

std::vector<std::string> call_info::distinct_types() const {
  std::vector<std::string> out;
  for (const auto& o : operands) {
    std::string t = o.type_name();
    if (std::find(out.begin(), out.end(), t) == out.end()) out.push_back(std::move(t));
  }
  return out;
}

namespace detail {

std::uint32_t registered_selector_count = 0;

namespace {

// One registered or attached selector. `type` is empty for a family registration, else the
// key (dtype_key, format_key) of the type or format it is attached to.
struct entry {
  selector_id id;
  operation op;
  std::string type;
  selector fn;
};

// Registration order; lookups walk it backwards (most recent first). Only registration
// writes it, and registration is not concurrent with operations, so lookups need no lock.
std::vector<entry>& registry() {
  static std::vector<entry> r;
  return r;
}
std::uint64_t next_id = 1;

// innermost: the chain of ct::selector_scope objects; in_kernel: a selected kernel runs on this
// thread, so its own ct calls run ct's implementation (no selector recursion).
thread_local selector_thread_state state;

// Registry keys for attached selectors: element types and formats apart, since a format may
// be named like a type.
std::string dtype_key(dtype t) { return std::string("dtype:") + dtype_name(t); }
std::string format_key(const std::string& name) { return "format:" + name; }
std::string operand_key(const operand_view& o) { return o.encoding ? format_key(o.encoding->name()) : dtype_key(o.type); }

selector_id add(operation op, std::string type, selector s) {
  if (!s) throw error(std::string("ct::add_selector: empty selector for operation ") + operation_name(op));
  const selector_id id{next_id++};
  registry().push_back(entry{id, op, std::move(type), std::move(s)});
  registered_selector_count = static_cast<std::uint32_t>(registry().size());
  return id;
}

}  // namespace

bool thread_has_selector_scope() noexcept { return state.innermost != nullptr; }

selector_thread_state exchange_selector_state(selector_thread_state s) noexcept {
  const selector_thread_state old = state;
  state = s;
  return old;
}

kernel select(const call_info& call) {
  if (state.in_kernel) return {};
  for (selector_scope_link* s = state.innermost; s; s = s->outer)
    if (s->op == call.op)
      if (kernel k = s->fn(call)) return k;
  const auto& r = registry();
  for (auto it = r.rbegin(); it != r.rend(); ++it)
    if (it->op == call.op && it->type.empty())
      if (kernel k = it->fn(call)) return k;
  bool attached = false;
  for (const auto& e : r) attached = attached || (e.op == call.op && !e.type.empty());
  if (!attached) return {};
  std::vector<std::string> visited;  // distinct operand types, in operand order
  for (const operand_view& o : call.operands) {
    std::string key = operand_key(o);
    if (std::find(visited.begin(), visited.end(), key) != visited.end()) continue;
    for (auto it = r.rbegin(); it != r.rend(); ++it)
      if (it->op == call.op && it->type == key)
        if (kernel k = it->fn(call)) return k;
    visited.push_back(std::move(key));
  }
  return {};
}

namespace {

// Copies a row-major contiguous buffer of `shape` into a strided destination, element by element
// of `bytes` bytes (any element type).
void copy_out(const unsigned char* src, unsigned char* dst, const dims& shape, const dims& strides, std::size_t bytes) {
  const int r = shape.size();
  const index_t n = element_count(shape);
  if (n == 0) return;
  std::vector<index_t> idx(static_cast<std::size_t>(r), 0);
  index_t off = 0;  // destination offset in elements
  for (index_t i = 0; i < n; ++i) {
    std::memcpy(dst + off * static_cast<index_t>(bytes), src + i * static_cast<index_t>(bytes), bytes);
    for (int a = r - 1; a >= 0; --a) {
      if (++idx[static_cast<std::size_t>(a)] < shape[a]) {
        off += strides[a];
        break;
      }
      off -= (shape[a] - 1) * strides[a];
      idx[static_cast<std::size_t>(a)] = 0;
    }
  }
}

// Marks the calling thread as running a selected kernel for the kernel's lifetime.
class in_kernel_guard {
 public:
  in_kernel_guard() noexcept : previous_(state.in_kernel) { state.in_kernel = true; }
  ~in_kernel_guard() { state.in_kernel = previous_; }
  in_kernel_guard(const in_kernel_guard&) = delete;
  in_kernel_guard& operator=(const in_kernel_guard&) = delete;

 private:
  bool previous_;
};

}  // namespace

void run_selected(const kernel& k, const call_info& call, void* data) {
  const operand_view& d = call.destination;
  target out{data, d.type, d.shape, d.strides};
  if (k.writes_destination) {
    in_kernel_guard guard;
    k.run(call, out);
    return;
  }
  const std::size_t bytes = dtype_bytes(d.type);
  const index_t n = element_count(d.shape);
  std::unique_ptr<unsigned char[]> staging(new unsigned char[static_cast<std::size_t>(std::max<index_t>(n, 1)) * bytes]);
  out.data = staging.get();
  out.strides = row_major_strides(d.shape);
  {
    in_kernel_guard guard;
    k.run(call, out);
  }
  copy_out(staging.get(), static_cast<unsigned char*>(data), d.shape, d.strides, bytes);
}

void throw_unsupported(const call_info& call) {
  std::string types;
  for (const auto& o : call.operands) types += (types.empty() ? "" : ", ") + o.type_name();
  std::string shapes;
  for (const auto& o : call.operands) shapes += (shapes.empty() ? "" : " and ") + o.shape.str();
  throw unsupported_operation("ct::" + std::string(call.name) + ": no implementation for operands of types " + types +
                              " (shapes " + shapes + "): ct does not implement this combination and no selector for " +
                              operation_name(call.op) +
                              " accepted it; ct never converts implicitly (use ct::cast or ct::decode first, or "
                              "register a selector: docs/selectors.md)");
}

}  // namespace detail

selector_id add_selector(operation op, selector s) { return detail::add(op, {}, std::move(s)); }
selector_id attach_selector(dtype type, operation op, selector s) { return detail::add(op, detail::dtype_key(type), std::move(s)); }
selector_id attach_selector(format fmt, operation op, selector s) {
  return detail::add(op, detail::format_key(fmt.name()), std::move(s));
}

void remove_selector(selector_id id) {
  auto& r = detail::registry();
  auto it = std::find_if(r.begin(), r.end(), [&](const detail::entry& e) { return e.id == id; });
  if (it == r.end())
    throw error("ct::remove_selector: no selector with id " + std::to_string(static_cast<std::uint64_t>(id)) +
                " is registered (removed already?)");
  r.erase(it);
  detail::registered_selector_count = static_cast<std::uint32_t>(r.size());
}

selector_scope::selector_scope(operation op, selector s) {
  if (!s) throw error(std::string("ct::selector_scope: empty selector for operation ") + operation_name(op));
  link_.op = op;
  link_.fn = std::move(s);
  link_.outer = detail::state.innermost;
  detail::state.innermost = &link_;
}
selector_scope::~selector_scope() { detail::state.innermost = link_.outer; }

}  // namespace ct
