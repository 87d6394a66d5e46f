// The column runner: blocks of neighbouring groups walked together along strided reduced
// axes (strategy column_block; sum over axis 0 of a row-major matrix).
#include <algorithm>
#include <cstring>
#include <vector>

#include "ct/exec/settings.hpp"
#include "src/expr/run/narrow_io.hpp"
#include "src/expr/column_kernels.hpp"
#include "src/expr/dtype_dispatch.hpp"
#include "src/expr/plan/plan.hpp"
#include "src/expr/run/interpreter.hpp"
#include "src/expr/run/reducers.hpp"
#include "src/expr/run/scratch.hpp"
#include "src/expr/run/strategy.hpp"
#include "src/expr/tuning.hpp"

namespace ct::detail::evaluator {

namespace {

struct column_runner {
  const plan& pl;
  unsigned char* scratch;
  const program& p;
  std::vector<void*>& ptr;
  std::vector<char>& uni;  // scalar flags
  std::vector<index_t>& offsets;
  unsigned char* invariant_area;
  column_state* states;
  index_t block = 0;  // groups in the current block
  std::vector<index_t>& walk_saved, &walk_idx;  // reused by every block

  column_runner(const plan& pl_, unsigned char* s, runner_workspace& ws)
      : pl(pl_), scratch(s), p(pl_.prog), ptr(ws.ptr), uni(ws.uni), offsets(ws.offsets), walk_saved(ws.walk_saved),
        walk_idx(ws.walk_idx) {
    ptr.assign(p.code().size(), nullptr);  // within the capacity prepare_workspace reserved
    uni.assign(pl.scalar.begin(), pl.scalar.end());
    offsets.assign(p.leaves().size() + 1, 0);
    invariant_area = scratch + pl.cache_at;
    auto addr = reinterpret_cast<std::uintptr_t>(invariant_area + p.code().size() * static_cast<std::size_t>(pl.block) * 8);
    addr = (addr + 63) / 64 * 64;
    states = reinterpret_cast<column_state*>(addr);
    for (std::size_t i = 0; i < p.code().size(); ++i)
      if (pl.uniform[i]) ptr[i] = home(static_cast<int>(i));
    for (int c : pl.constants) exec(c, 0, home(c));  // scalar (uni): one value
  }

  unsigned char* home(int i) const { return invariant_area + static_cast<std::size_t>(i) * static_cast<std::size_t>(pl.block) * 8; }
  // One reducer's accumulators for the block (plan::block column_states' bytes), as five arrays.
  column_accumulators state_of(int r) const {
    auto* base = reinterpret_cast<unsigned char*>(states) +
                 static_cast<std::size_t>(pl.reducer_index[static_cast<std::size_t>(r)]) * static_cast<std::size_t>(pl.block) * sizeof(column_state);
    auto b = static_cast<std::size_t>(pl.block);
    return {reinterpret_cast<double*>(base), reinterpret_cast<double*>(base + 8 * b),
            reinterpret_cast<std::int64_t*>(base + 16 * b), reinterpret_cast<index_t*>(base + 24 * b),
            reinterpret_cast<bool*>(base + 32 * b)};
  }
  index_t length(int i) const { return uni[static_cast<std::size_t>(i)] ? 1 : block; }

  // Loads operand values for the block at reduced position `start` of the inner walk axis
  // (invariant loads ignore it), along the retained axis.
  void load(int i, index_t start, void* out) {
    const instruction& in = p.code()[static_cast<std::size_t>(i)];
    const auto l = static_cast<std::size_t>(in.leaf);
    const leaf_info& leaf = p.leaves()[l];
    const index_t stride = pl.geo.k_strides.back()[l];
    const index_t base = offsets[l] + (pl.uniform[static_cast<std::size_t>(i)] ? 0 : start * pl.geo.walk.back().strides[l]);
    const index_t n = length(i);
    if (widened(leaf.type)) {
      widen_values(leaf.type, static_cast<const std::uint16_t*>(leaf.data) + base, stride, static_cast<float*>(out), n, current_settings());
      ptr[static_cast<std::size_t>(i)] = out;
      return;
    }
    with_type(leaf.type, [&](auto tag) {
      using T = decltype(tag);
      const T* src = static_cast<const T*>(leaf.data) + base;
      if (stride == 1 || n == 1) {
        // The stretch a few reduced positions ahead (rows of a column sum are far apart).
        const index_t step = pl.geo.walk.back().strides[l];
        if (stride == 1 && step != 0 && !pl.uniform[static_cast<std::size_t>(i)])
          for (index_t b = 0; b < n * static_cast<index_t>(sizeof(T)); b += 64)
            __builtin_prefetch(reinterpret_cast<const unsigned char*>(src + column_prefetch_rows * step) + b);
        ptr[static_cast<std::size_t>(i)] = const_cast<T*>(src);
        return;
      }
      T* dst = static_cast<T*>(out);
      for (index_t j = 0; j < n; ++j) dst[j] = src[j * stride];
      ptr[static_cast<std::size_t>(i)] = dst;
    });
  }

  void exec(int i, index_t start, void* out) {
    if (p.code()[static_cast<std::size_t>(i)].op == opcode::load) return load(i, start, out);
    exec_op(pl, i, length(i), ptr.data(), uni.data(), out, current_settings());
    ptr[static_cast<std::size_t>(i)] = out;
  }

  // The reducers of the current pass (reducers.hpp), over the block.
  void init_reducer(int r) {
    column_start(state_of(r), static_cast<reduce_op>(p.code()[static_cast<std::size_t>(r)].sub), block);
  }

  void feed_reducer(int r, index_t pos) {
    const instruction& in = p.code()[static_cast<std::size_t>(r)];
    const int arg = in.args[0];
    const bool sa = uni[static_cast<std::size_t>(arg)];
    column_feed(state_of(r), static_cast<reduce_op>(in.sub), p.code()[static_cast<std::size_t>(arg)].type,
                ptr[static_cast<std::size_t>(arg)], sa, block, pos);
  }

  void finish_reducer(int r) {
    const instruction& in = p.code()[static_cast<std::size_t>(r)];
    column_finish(state_of(r), static_cast<reduce_op>(in.sub), p.code()[static_cast<std::size_t>(in.args[0])].type, in.type,
                  ptr[static_cast<std::size_t>(r)], block);
  }

  void write(const void* src, bool src_scalar, index_t start) {
    const std::size_t d = offsets.size() - 1;
    const std::size_t esize = dtype_bytes(pl.dest.type);
    const index_t stride = pl.geo.k_strides.back()[d];
    auto* dst = static_cast<unsigned char*>(pl.dest.data) + (offsets[d] + start * pl.geo.walk.back().strides[d]) * static_cast<index_t>(esize);
    const auto* s = static_cast<const unsigned char*>(src);
    if (pl.narrow_dest) return narrow_values(pl.dest.type, static_cast<const float*>(src), src_scalar, dst, stride, block, current_settings());
    if (stride == 1 && !src_scalar) {
      if (dst != s) std::memmove(dst, s, static_cast<std::size_t>(block) * esize);
      return;
    }
    for (index_t j = 0; j < block; ++j)
      std::memcpy(dst + j * stride * static_cast<index_t>(esize), s + (src_scalar ? 0 : static_cast<std::size_t>(j) * esize), esize);
  }

  void run_block(index_t g, index_t count) {
    block = count;
    pl.geo.group_offsets(g, offsets);
    // Walk every reduced position (outer axes by odometer, the inner one step by step).
    auto walk = [&](auto&& body) {
      const auto& w = pl.geo.walk;
      const index_t inner = w.back().extent;
      if (inner == 0) return;
      const int outer = static_cast<int>(w.size()) - 1;
      if (outer == 0) {
        for (index_t start = 0; start < inner; ++start) body(start, start);
        return;
      }
      std::vector<index_t>& saved = walk_saved;
      std::vector<index_t>& idx = walk_idx;
      saved = offsets;
      idx.assign(static_cast<std::size_t>(outer), 0);
      index_t pos = 0;
      do {
        for (index_t start = 0; start < inner; ++start) body(pos + start, start);
        pos += inner;
      } while (pl.geo.next_outer(offsets, idx));
      offsets = saved;
    };
    for (std::size_t ps = 0; ps < pl.passes.size(); ++ps) {
      const pass_plan& pp = pl.passes[ps];
      for (int u : pp.uniforms) exec(u, 0, home(u));  // not ptr[u]: a load may have pointed it at the operand
      auto slot = [&](int i) { return scratch + static_cast<std::size_t>(pp.slot[static_cast<std::size_t>(i)]) * pl.slot_bytes; };
      if (ps + 1 < pl.passes.size()) {
        for (int r : pp.reducers) init_reducer(r);
        if (pp.column_sums) {
          // Plain sums of operands (sum over axis 0): whole runs of reduced positions at once.
          for (int r : pp.reducers) {
            const instruction& load = p.code()[static_cast<std::size_t>(p.code()[static_cast<std::size_t>(r)].args[0])];
            const auto l = static_cast<std::size_t>(load.leaf);
            const leaf_info& leaf = p.leaves()[l];
            const index_t stride = pl.geo.walk.back().strides[l], rows = pl.geo.walk.back().extent;
            if (leaf.type == dtype::f32)
              column::add_rows(state_of(r).dvalue, static_cast<const float*>(leaf.data) + offsets[l], stride, rows, block);
            else
              column::add_rows(state_of(r).dvalue, static_cast<const double*>(leaf.data) + offsets[l], stride, rows, block);
          }
          for (int r : pp.reducers) finish_reducer(r);
          continue;
        }
        walk([&](index_t pos, index_t start) {
          for (int i : pp.varying) exec(i, start, slot(i));
          for (int r : pp.reducers) feed_reducer(r, pos);
        });
        for (int r : pp.reducers) finish_reducer(r);
      } else if (!pl.root_uniform) {
        walk([&](index_t, index_t start) {
          for (int i : pp.varying) exec(i, start, slot(i));
          write(ptr[static_cast<std::size_t>(pl.root)], uni[static_cast<std::size_t>(pl.root)], start);
        });
      }
    }
    if (pl.root_broadcast)  // one value per group, at each of its positions (plan::root_broadcast)
      walk([&](index_t, index_t start) { write(ptr[static_cast<std::size_t>(pl.root)], uni[static_cast<std::size_t>(pl.root)], start); });
    else if (pl.root_uniform)
      write(ptr[static_cast<std::size_t>(pl.root)], uni[static_cast<std::size_t>(pl.root)], 0);
  }
};

}  // namespace

// Blocks of neighbouring groups along the innermost retained axis; each group's result
// does not depend on which block it is in.
void run_column_blocks(const plan& pl, index_t start, index_t end, unsigned char* scratch, runner_workspace& ws) {
  column_runner runner(pl, scratch, ws);
  const index_t row = pl.geo.k_extents.back();
  for (index_t g = start; g < end;) {
    const index_t n = std::min({pl.block, end - g, row - g % row});
    runner.run_block(g, n);
    g += n;
  }
}

}  // namespace ct::detail::evaluator
