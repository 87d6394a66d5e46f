// src/expr/plan/stages.hpp — the stages of build_plan, in the order it calls them (internal
// to src/expr/plan/).
#pragma once
#include <cstddef>
#include <iterator>
#include <vector>

#include "src/expr/plan/plan.hpp"

namespace ct::detail {
namespace [[gnu::visibility("hidden")]] evaluator {  // see plan.hpp

void plan_iteration_space(plan& pl);  // geometry.cpp: axes, uniform values, row or column walk, tile
void plan_passes(plan& pl);           // passes.cpp: values per pass, row cache, tile slots, reducer states
void plan_prefetch(plan& pl);         // prefetch.cpp: which loads prefetch or stream, in which pass
void plan_fusion(plan& pl, bool may_stream);  // fusion.cpp: tile functions, fused kernels, streaming
void plan_steps(plan& pl);            // passes.cpp: the row runner's step and feed lists
void plan_kernel_prefetch(plan& pl);  // prefetch.cpp: next-group rows fetched from inside a kernel
void decide_patterns(plan& pl);       // patterns.cpp: the fast paths

/// The operands of an instruction, viewed in place: `in.args` without its unused (-1)
/// entries, or a ct::map's argument list. Planning walks these in nested loops; returning
/// them as vectors was a third of the allocations of a small eval.
class arg_range {
 public:
  arg_range(const int* b, const int* e) : b_(skip(b, e)), e_(e) {}
  struct iterator {
    const int* at;
    const int* end;
    int operator*() const { return *at; }
    iterator& operator++() {
      at = skip(at + 1, end);
      return *this;
    }
    bool operator!=(const iterator& o) const { return at != o.at; }
  };
  iterator begin() const { return {b_, e_}; }
  iterator end() const { return {e_, e_}; }

 private:
  static const int* skip(const int* p, const int* e) {
    while (p != e && *p < 0) ++p;
    return p;
  }
  const int* b_;
  const int* e_;
};
inline arg_range all_args(const program& p, const instruction& in) {
  if (in.op == opcode::map) {
    const std::vector<int>& a = p.maps()[static_cast<std::size_t>(in.leaf)].args;
    return {a.data(), a.data() + a.size()};
  }
  return {std::begin(in.args), std::end(in.args)};
}

}  // namespace evaluator
}  // namespace ct::detail
