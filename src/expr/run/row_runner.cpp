// The row runner: a group's passes, tile by tile along the reduced axes (strategies
// row_walk, one_tile and norm_rows).
#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

#include "ct/exec/settings.hpp"
#include "src/expr/run/narrow_io.hpp"
#include "src/kernels/kernels.hpp"
#include "src/expr/dtype_dispatch.hpp"
#include "src/expr/one_value.hpp"
#include "src/expr/plan/plan.hpp"
#include "src/expr/run/interpreter.hpp"
#include "src/expr/run/reducers.hpp"
#include "src/expr/run/scratch.hpp"
#include "src/expr/run/strategy.hpp"
#include "src/expr/stream_copy.hpp"
#include "src/expr/tuning.hpp"

namespace ct::detail::evaluator {

namespace {

// Software prefetch of the bytes a tile will read `distance` bytes from now (the plan's
// prefetch_distance, tuning.hpp). Prefetches never fault: running past an operand's end is harmless.
// Always inlined: GCC may delete calls to a function whose only effect is a prefetch (it did to
// the AVX-512 encoded kernels' weight prefetch, ahead_prefetch in src/encoded/qdot.hpp).
inline __attribute__((always_inline)) void prefetch_ahead(const unsigned char* p, index_t bytes, index_t distance) {
  for (index_t b = 0; b < bytes; b += 64) __builtin_prefetch(p + distance + b);
}

struct group_runner {
  const plan& pl;
  unsigned char* scratch;
  const program& p;
  std::vector<void*>& ptr;          // current value pointer per instruction
  std::vector<char>& uni;           // uniform flag per instruction
  std::vector<index_t>& offsets;    // per operand: offset of the group's first element
  unsigned char* uniform_area;
  reducer_state* states;
  const pass_plan* pass = nullptr;  // the current pass
  const settings s = current_settings();        // fixed for the whole callback
  const index_t stream_ahead_bytes = kernels::stream_ahead(s);  // the streamed kernels' prefetch distance

  group_runner(const plan& pl_, unsigned char* s, runner_workspace& ws)
      : pl(pl_), scratch(s), p(pl_.prog), ptr(ws.ptr), uni(ws.uni), offsets(ws.offsets), walk_base(ws.walk_base),
        walk_idx(ws.walk_idx), walk_saved(ws.walk_saved), next_offsets(ws.next_offsets) {
    ptr.assign(p.code().size(), nullptr);  // within the capacity prepare_workspace reserved
    uni.assign(pl.uniform.begin(), pl.uniform.end());
    offsets.assign(p.leaves().size() + 1, 0);
    uniform_area = scratch + pl.cache_at + pl.cache_bytes;
    auto addr = reinterpret_cast<std::uintptr_t>(uniform_area + p.code().size() * 8);
    addr = (addr + alignof(reducer_state) - 1) / alignof(reducer_state) * alignof(reducer_state);
    states = reinterpret_cast<reducer_state*>(addr);
    for (std::size_t i = 0; i < p.code().size(); ++i)
      if (uni[i]) ptr[i] = uniform_area + i * 8;
    for (int c : pl.constants) exec_instruction(c, 1, ptr[static_cast<std::size_t>(c)], 0);
  }

  // One step of the current pass over a tile of n elements at walk position pos (start: its
  // offset within the innermost merged axis). out: where the result goes instead of the step's
  // own tile (the destination, for the output pass's root), or nullptr.
  void exec_step(const pass_plan::step& st, index_t n, index_t pos, index_t start, void* out = nullptr) {
    const auto ui = static_cast<std::size_t>(st.i);
    if (st.kind == pass_plan::step::load_in_place) {
      if (st.widened) {
        ptr[ui] = scratch + st.out_at + static_cast<std::size_t>(start) * sizeof(float);
        return;
      }
      const unsigned char* at = static_cast<const unsigned char*>(p.leaves()[static_cast<std::size_t>(st.leaf)].data) +
                                (offsets[static_cast<std::size_t>(st.leaf)] + start) * st.esize;
      if (st.burst && !fetched) prefetch_ahead(at, n * st.esize, pl.prefetch_distance);
      ptr[ui] = const_cast<unsigned char*>(at);
      return;
    }
    if (out == nullptr && st.has_out) out = scratch + st.out_at + static_cast<std::size_t>(pos * st.out_step);
    if (st.kind == pass_plan::step::general) {
      exec_instruction(st.i, n, out, start);
      return;
    }
    if (st.f64) run_kernel<double>(st, n, pos, out);
    else run_kernel<float>(st, n, pos, out);
    ptr[ui] = out;
  }

  // A kernel step (pass_plan::step: direct .. scale_then) over a tile of n elements into out.
  template <class T>
  void run_kernel(const pass_plan::step& st, index_t n, index_t pos, void* out) {
    using step = pass_plan::step;
    const auto a = [&](int k) { return st.a[k] < 0 ? nullptr : static_cast<const T*>(ptr[static_cast<std::size_t>(st.a[k])]); };
    T* y = static_cast<T*>(out);
    const bool fetch = fetch_tile && st.i == pass->prefetch_by;
    switch (st.kind) {
      case step::direct:
        if (fetch) reinterpret_cast<kernels::unary_prefetch_fn<T>>(st.fn2)(a(0), y, n, next_row_ahead());
        else if (st.arity == 1) reinterpret_cast<kernels::unary_tile_fn<T>>(st.fn)(a(0), y, n);
        else if (st.arity == 2) reinterpret_cast<kernels::binary_tile_fn<T>>(st.fn)(a(0), a(1), y, n);
        else reinterpret_cast<kernels::muladd_tile_fn<T>>(st.fn)(a(0), a(1), a(2), y, n);
        break;
      case step::feeding:
        kernels::unary_sum<T>(reinterpret_cast<kernels::unary_sum_tile_fn<T>>(st.fn2),
                              reinterpret_cast<kernels::unary_tile_fn<T>>(st.fn), a(0), st.store ? y : nullptr, n,
                              states[st.state].lanes);
        break;
      case step::sub_feeding:
        kernels::sub_unary_sum<T>(reinterpret_cast<kernels::sub_unary_sum_tile_fn<T>>(st.fn2),
                                  reinterpret_cast<kernels::binary_tile_fn<T>>(st.fn),
                                  reinterpret_cast<kernels::unary_tile_fn<T>>(st.fn3), a(0), a(1), y, n,
                                  states[st.state].lanes);
        break;
      case step::after_sub:
        if (fetch) reinterpret_cast<kernels::sub_unary_prefetch_fn<T>>(st.fn2)(a(0), a(1), y, n, next_row_ahead());
        else reinterpret_cast<kernels::binary_tile_fn<T>>(st.fn)(a(0), a(1), y, n);
        break;
      case step::scale_then:
        reinterpret_cast<kernels::scale_then_tile_fn<T>>(st.fn)(a(0), a(1), a(2), a(3), y, n);
        break;
      case step::sub_keep: {
        T* d = reinterpret_cast<T*>(scratch + st.keep_at + static_cast<std::size_t>(pos * st.keep_step));
        reinterpret_cast<kernels::sub_keep_unary_fn<T>>(fetch ? st.fn2 : st.fn)(a(0), a(1), d, y, n,
                                                                                 fetch ? next_row_ahead() : nullptr);
        ptr[static_cast<std::size_t>(st.keep)] = d;
        break;
      }
      default: break;
    }
  }

  // The general path: a constant or uniform instruction that is not one IEEE operation
  // (n = 1, pos = 0; one-value ones are pass_plan::uniform_step), a gathered load, or an
  // operation without a direct tile function (integer, bool, comparisons, casts, ct::map, pow).
  void exec_instruction(int i, index_t n, void* out, index_t pos) {
    if (p.code()[static_cast<std::size_t>(i)].op == opcode::load) {
      load_tile(pl, i, offsets, uni[static_cast<std::size_t>(i)] ? 0 : pos, uni[static_cast<std::size_t>(i)] ? 1 : n, out);
    } else {
      exec_op(pl, i, n, ptr.data(), uni.data(), out, s);
    }
    ptr[static_cast<std::size_t>(i)] = out;
  }

  // The next group's row of pass->prefetch_leaf, at the current tile's position.
  const void* next_row_ahead() const {
    const auto l = static_cast<std::size_t>(pass->prefetch_leaf);
    const leaf_info& leaf = p.leaves()[l];
    return static_cast<const unsigned char*>(leaf.data) + (next_offsets[l] + tile_pos) * static_cast<index_t>(dtype_bytes(leaf.type));
  }

  // The group's rows of the 16-bit leaves read in place (plan::widen_at), widened to float32
  // into the row cache tile by tile, each tile's bytes prefetched ahead first (pass 0 then
  // reads the widened row from L1 and prefetches nothing).
  kernels::widen_fn widen_bf16 = kernels::resolve_widen_bf16(s), widen_f16 = kernels::resolve_widen_f16(s);
  bool widened_once = false;  // the widen_once rows are in the row cache
  bool prefetched_next = false;  // the group's rows were prefetched by the previous group's pass 1
  void widen_group_rows() {
    for (int l : pl.widened_leaves) {
      const auto ul = static_cast<std::size_t>(l);
      if (pl.widen_once[ul] && widened_once) continue;
      const leaf_info& leaf = p.leaves()[ul];
      const auto* x = static_cast<const std::uint16_t*>(leaf.data) + offsets[ul];
      auto* y = reinterpret_cast<float*>(scratch + pl.cache_at + pl.widen_at[ul]);
      const bool bf = leaf.type == dtype::bf16;
      const kernels::widen_fn fn = bf ? widen_bf16 : widen_f16;
      for (index_t at = 0; at < pl.geo.reduced; at += pl.tile) {
        const index_t n = std::min(pl.tile, pl.geo.reduced - at);
        if (!pl.widen_once[ul] && !prefetched_next) prefetch_ahead(reinterpret_cast<const unsigned char*>(x + at), n * 2, pl.prefetch_distance);
        if (fn != nullptr) fn(x + at, y + at, n);
        else if (bf) kernels::widen_bf16(x + at, y + at, n, s);
        else kernels::widen_f16(x + at, y + at, n, s);
      }
    }
    widened_once = true;
  }

  // The reducers of the current pass (reducers.hpp), in this callback's states.
  void init_reducer(int i) {
    row_start(states[pl.reducer_index[static_cast<std::size_t>(i)]], p.code()[static_cast<std::size_t>(i)],
              pl.float_sum[static_cast<std::size_t>(i)] != 0);
  }

  void feed_reducer(const pass_plan::feed& fd, const void* x, index_t n, index_t pos) {
    const instruction& in = p.code()[static_cast<std::size_t>(fd.r)];
    const bool streamed = pass->streamed[static_cast<std::size_t>(fd.a)] != 0 && !fetched;
    reducer_state& st = states[pl.reducer_index[static_cast<std::size_t>(fd.r)]];
    const dtype at = p.code()[static_cast<std::size_t>(fd.a)].type;
    row_feed(st, fd, in, at, x, n, pos, streamed ? stream_ahead_bytes : 0, s);
  }

  void finish_reducer(int i) {
    const instruction& in = p.code()[static_cast<std::size_t>(i)];
    const reducer_state& st = states[pl.reducer_index[static_cast<std::size_t>(i)]];
    void* out = ptr[static_cast<std::size_t>(i)];
    if (pl.float_sum[static_cast<std::size_t>(i)]) row_finish_sum(st, in, out);
    else row_finish_general(st, in, p.code()[static_cast<std::size_t>(in.args[0])].type, out, s);
  }

  std::vector<index_t>& walk_base, &walk_idx, &walk_saved;

  // Runs `body(n, pos, tile offsets)` over the merged reduced axes, tile by tile.
  template <class Body>
  void walk(Body&& body) {
    const auto& w = pl.geo.walk;
    const index_t inner = w.back().extent;
    if (inner == 0) return;
    const int outer = static_cast<int>(w.size()) - 1;
    if (outer == 0) {  // the common case: one merged reduced axis, no odometer
      for (index_t start = 0; start < inner; start += pl.tile) body(std::min(pl.tile, inner - start), start, start);
      return;
    }
    // Reused buffers: this runs once per group and pass, so it must not allocate.
    std::vector<index_t>& base = walk_base, &idx = walk_idx, &saved = walk_saved;
    base = offsets;
    saved = offsets;
    idx.assign(static_cast<std::size_t>(outer), 0);
    index_t pos = 0;
    do {
      offsets = base;
      for (index_t start = 0; start < inner; start += pl.tile) body(std::min(pl.tile, inner - start), pos + start, start);
      pos += inner;
    } while (pl.geo.next_outer(base, idx));
    offsets = saved;
  }

  std::vector<index_t>& next_offsets;  // of group g + 1 while group g runs (prefetch_next, norm pairs)
  kernels::lane_accumulator pair_lanes;  // the second row's lanes of a norm pair
  bool has_next = false;
  // This group's rows were prefetched by a kernel of the previous group (has_next then, and
  // plan::rows_prefetched): its first pass reads them from the caches and issues no
  // prefetches of its own, which would only fetch further rows early.
  bool fetched = false;
  // The current tile prefetches the next group's rows, at position tile_pos of the walk.
  bool fetch_tile = false;
  index_t tile_pos = 0;

  // Into L1 (an L2 hint measured no gain: the first pass then still waits on L2 misses).
  void prefetch_next_group(index_t pos, index_t n) {
    tile_pos = pos;
    for (int l : pl.next_group_leaves) {
      if (l == pass->prefetch_leaf) continue;  // by pass->prefetch_by's kernel
      const leaf_info& leaf = p.leaves()[static_cast<std::size_t>(l)];
      const index_t esize = static_cast<index_t>(dtype_bytes(leaf.type));
      const auto* at = static_cast<const unsigned char*>(leaf.data) + (next_offsets[static_cast<std::size_t>(l)] + pos) * esize;
      for (index_t b = 0; b < n * esize; b += 64) __builtin_prefetch(at + b);
    }
  }

  // A pass's values of one element (mean, 1/sqrt(var + eps), …), before its tiles.
  void run_uniform_steps(const pass_plan& pp) {
    for (const pass_plan::uniform_step& us : pp.uniform_steps) {
      void* out = ptr[static_cast<std::size_t>(us.i)];
      if (!us.one) {
        exec_instruction(us.i, 1, out, 0);
        continue;
      }
      const instruction& in = p.code()[static_cast<std::size_t>(us.i)];
      const void *a = ptr[static_cast<std::size_t>(us.a)], *b = ptr[static_cast<std::size_t>(us.b)];
      if (us.f64) *static_cast<double*>(out) = one_value(in, static_cast<const double*>(a), static_cast<const double*>(b));
      else *static_cast<float*>(out) = one_value(in, static_cast<const float*>(a), static_cast<const float*>(b));
    }
  }

  // One tile of a reduction pass: its steps, then the reducers the runner feeds.
  void reduction_tile(const pass_plan& pp, index_t n, index_t pos, index_t start) {
    for (const pass_plan::step& st : pp.steps) exec_step(st, n, pos, start);
    for (const pass_plan::feed& fd : pp.feeds_list) {
      const void* x = ptr[static_cast<std::size_t>(fd.a)];
      if (fd.uniform_arg) {  // a uniform argument repeats along the tile
        with_type(p.code()[static_cast<std::size_t>(fd.a)].type, [&](auto tag) {
          using T = decltype(tag);
          T* t = static_cast<T*>(slot(pp, fd.a));
          std::fill(t, t + n, *static_cast<const T*>(x));
          x = t;
        });
      }
      feed_reducer(fd, x, n, pos);
    }
  }

  // One tile of the output pass, its result written to d (dstride elements apart).
  void output_tile(const pass_plan& pp, index_t n, index_t pos, index_t start, unsigned char* d, index_t dstride,
                   std::size_t esize) {
    for (const pass_plan::step& st : pp.steps) {
      if (st.i != pl.root) {
        exec_step(st, n, pos, start);
        continue;
      }
      // Straight into the destination when it is contiguous along the walk (a load read in
      // place is copied below instead; a streamed result goes out through stream_copy
      // unless the root's own kernel streams, plan::root_stream).
      const bool direct = dstride == 1 && (!pl.stream || pl.root_stream != nullptr) &&
                          st.kind != pass_plan::step::load_in_place && !pl.narrow_dest;
      exec_step(st, n, pos, start, direct ? d : nullptr);
    }
    const unsigned char* r = static_cast<const unsigned char*>(ptr[static_cast<std::size_t>(pl.root)]);
    if (pl.narrow_dest) return narrow_out(reinterpret_cast<const float*>(r), d, dstride, n);
    if (r == d) return;
    const std::size_t bytes = static_cast<std::size_t>(n) * esize;
    if (dstride == 1 && pl.stream && (r + bytes <= d || d + bytes <= r)) stream_copy(d, r, bytes);
    else if (dstride == 1) std::memmove(d, r, bytes);
    else for (index_t j = 0; j < n; ++j) std::memcpy(d + j * dstride * static_cast<index_t>(esize), r + static_cast<std::size_t>(j) * esize, esize);
  }

  // float32 results into a 16-bit destination, rounded once; a streamed result is rounded into
  // a tile here first and copied out with non-temporal stores (n <= max_tile).
  alignas(64) std::uint16_t narrowed[max_tile];
  void narrow_out(const float* r, unsigned char* d, index_t dstride, index_t n) {
    if (!pl.stream || dstride != 1) return narrow_values(pl.dest.type, r, false, d, dstride, n, s);
    narrow_values(pl.dest.type, r, false, narrowed, 1, n, s);
    stream_copy(d, narrowed, static_cast<std::size_t>(n) * sizeof(std::uint16_t));
  }

  // A root of one value per group (a reduction evaluated on its own) goes to the group's
  // destination element once its passes are done; when the destination runs along the
  // reduced axes (plan::root_broadcast), to each of the group's positions.
  void write_uniform_root() {
    const std::size_t esize = dtype_bytes(pl.dest.type);
    const void* value = ptr[static_cast<std::size_t>(pl.root)];
    const auto put = [&](index_t offset, index_t stride, index_t n) {
      unsigned char* d = static_cast<unsigned char*>(pl.dest.data) + offset * static_cast<index_t>(esize);
      if (pl.narrow_dest) return narrow_values(pl.dest.type, static_cast<const float*>(value), true, d, stride, n, s);
      for (index_t j = 0; j < n; ++j) std::memcpy(d + j * stride * static_cast<index_t>(esize), value, esize);
    };
    if (!pl.root_broadcast) return put(offsets.back(), 1, 1);
    const index_t dstride = pl.geo.walk.back().strides.back();
    walk([&](index_t n, index_t, index_t start) { put(offsets.back() + start * dstride, dstride, n); });
  }

  // run_group for plan::norm: one kernel call per group, or per two groups g and g + 1
  // (count 2, norm_rows::pairs); between its passes the kernel calls back here for the sums'
  // values and the next pass's one values.
  template <class T>
  void run_norm_rows(index_t g, int count) {
    const norm_rows& nr = pl.norm;
    pl.geo.group_offsets(g, offsets);
    widen_group_rows();
    if (count == 2) {
      next_offsets.resize(offsets.size());
      pl.geo.group_offsets(g + 1, next_offsets);
    }
    const auto leaf = [&](int l, const std::vector<index_t>& off) -> const T* {
      if (l < 0) return nullptr;
      const auto ul = static_cast<std::size_t>(l);
      if (pl.widen_at[ul] != plan::npos) return reinterpret_cast<const T*>(scratch + pl.cache_at + pl.widen_at[ul]);
      return static_cast<const T*>(p.leaves()[ul].data) + off[ul];
    };
    run_uniform_steps(pl.passes[0]);
    kernels::norm_row_io<T> io[2];
    for (int i = 0; i < count; ++i) {
      const std::vector<index_t>& off = i == 0 ? offsets : next_offsets;
      T* y = pl.narrow_dest ? reinterpret_cast<T*>(scratch + nr.y_at) : static_cast<T*>(pl.dest.data) + off.back();
      const T* c = nr.c_one >= 0 ? static_cast<const T*>(ptr[static_cast<std::size_t>(nr.c_one)]) : leaf(nr.c_leaf, off);
      io[i] = {leaf(nr.x_leaf, off), y, leaf(nr.w_leaf, off), c, i == 0 ? &states[0].lanes : &pair_lanes};
    }
    reinterpret_cast<kernels::norm_row_fn<T>>(nr.fn)(io, count, pl.tile, nr.streamed ? stream_ahead_bytes : 0, &norm_stage<T>, this);
    if (pl.narrow_dest)
      narrow_out(reinterpret_cast<const float*>(io[0].y),
                 static_cast<unsigned char*>(pl.dest.data) + offsets.back() * static_cast<index_t>(dtype_bytes(pl.dest.type)), 1,
                 pl.tile);
  }
  // The sum's value as finish_reducer stores it, then the next pass's one values.
  template <class T>
  static const T* norm_stage(void* self, int stage, double sum) {
    auto& r = *static_cast<group_runner*>(self);
    const norm_rows& nr = r.pl.norm;
    *static_cast<T*>(r.ptr[static_cast<std::size_t>(stage == 0 ? nr.s1 : nr.s2)]) = static_cast<T>(sum);
    r.run_uniform_steps(r.pl.passes[static_cast<std::size_t>(stage + 1)]);
    return static_cast<const T*>(r.ptr[static_cast<std::size_t>(stage == 0 ? nr.m : nr.r)]);
  }

  // run_group for plan::one_tile: every pass is one tile at position 0, nothing is
  // prefetched for the next group and no reducer is fed early.
  void run_one_tile(index_t g) {
    pl.geo.group_offsets(g, offsets);
    widen_group_rows();
    const index_t n = pl.tile;
    const std::size_t dest_k = offsets.size() - 1;
    const std::size_t last = pl.passes.size() - 1;
    for (std::size_t ps = 0; ps <= last; ++ps) {
      const pass_plan& pp = pl.passes[ps];
      pass = &pp;
      run_uniform_steps(pp);
      start_tile(pp, false, 0, n);
      if (ps < last) {
        for (int r : pp.reducers) init_reducer(r);
        reduction_tile(pp, n, 0, 0);
        for (int r : pp.reducers) finish_reducer(r);
      } else if (!pl.root_uniform) {
        const std::size_t esize = dtype_bytes(pl.dest.type);
        unsigned char* d = static_cast<unsigned char*>(pl.dest.data) + offsets[dest_k] * static_cast<index_t>(esize);
        output_tile(pp, n, 0, 0, d, pl.geo.walk.back().strides[dest_k], esize);
      }
    }
    if (pl.root_uniform) write_uniform_root();
  }

  // next: whether group g + 1 runs next in this callback.
  void run_group(index_t g, bool next) {
    if (has_next) std::swap(offsets, next_offsets);  // computed for the prefetch
    else pl.geo.group_offsets(g, offsets);
    fetched = has_next && pl.rows_prefetched;
    prefetched_next = has_next && pl.prefetches_next;
    has_next = next && pl.prefetches_next;
    if (has_next) {
      next_offsets.resize(offsets.size());
      pl.geo.group_offsets(g + 1, next_offsets);
    }
    widen_group_rows();
    const std::size_t dest_k = offsets.size() - 1;
    for (std::size_t ps = 0; ps < pl.passes.size(); ++ps) {
      const pass_plan& pp = pl.passes[ps];
      pass = &pp;
      run_uniform_steps(pp);
      const bool output_pass = ps + 1 == pl.passes.size();
      if (!output_pass) {
        for (int r : pp.reducers) init_reducer(r);
        if (ps == 0 && early_ready) {  // fed during the previous group's output pass
          early_ready = false;
          reducer_state& st = states[pl.reducer_index[static_cast<std::size_t>(pl.early.reducer)]];
          if (pl.early.f64) st.extreme_d = early_d;
          else st.extreme_f = early_f;
          for (int r : pp.reducers) finish_reducer(r);
          continue;
        }
        const bool fetch_next = pp.prefetch_next && has_next;
        walk([&](index_t n, index_t pos, index_t start) __attribute__((always_inline)) {
          start_tile(pp, fetch_next, pos, n);
          reduction_tile(pp, n, pos, start);
        });
        for (int r : pp.reducers) finish_reducer(r);
      } else if (!pl.root_uniform) {
        const index_t dstride = pl.geo.walk.back().strides[dest_k];
        const std::size_t esize = dtype_bytes(pl.dest.type);
        const bool fetch_next = pp.prefetch_next && has_next;
        const bool feed_early = pl.early.reducer >= 0 && has_next;
        if (feed_early) {
          kernels::extreme_init(early_f);
          kernels::extreme_init(early_d);
        }
        walk([&](index_t n, index_t pos, index_t start) __attribute__((always_inline)) {
          start_tile(pp, fetch_next, pos, n);
          unsigned char* d = static_cast<unsigned char*>(pl.dest.data) + (offsets[dest_k] + start * dstride) * static_cast<index_t>(esize);
          output_tile(pp, n, pos, start, d, dstride, esize);
          if (feed_early) feed_next_extreme(n, pos, start);
        });
        early_ready = feed_early;
      }
    }
    if (pl.root_uniform) write_uniform_root();
  }

  // Early extreme (plan::early): the next group's first-pass state, fed tile by tile
  // during this group's output pass exactly as its first pass would feed it.
  kernels::extreme_state<float> early_f;
  kernels::extreme_state<double> early_d;
  bool early_ready = false;  // early_f / early_d hold the state of the group about to run

  void feed_next_extreme(index_t n, index_t pos, index_t start) {
    const auto l = static_cast<std::size_t>(pl.early.leaf);
    const leaf_info& leaf = p.leaves()[l];
    if (pl.early.f64) {
      const double* x = static_cast<const double*>(leaf.data) + next_offsets[l] + start;
      if (pl.early.min) kernels::min_accumulate<double>(early_d, x, n, pos, s, false);
      else kernels::max_accumulate<double>(early_d, x, n, pos, s, false);
    } else {
      const float* x = static_cast<const float*>(leaf.data) + next_offsets[l] + start;
      if (pl.early.min) kernels::min_accumulate<float>(early_f, x, n, pos, s, false);
      else kernels::max_accumulate<float>(early_f, x, n, pos, s, false);
    }
  }

  // Before a tile's steps: the next group's prefetch (when this pass does it) and the row-cache
  // values computed by earlier passes.
  void start_tile(const pass_plan& pp, bool fetch_next, index_t pos, index_t n) {
    fetch_tile = fetch_next;
    if (fetch_next) prefetch_next_group(pos, n);
    for (const pass_plan::reuse& r : pp.reuses) ptr[static_cast<std::size_t>(r.i)] = scratch + r.at + static_cast<std::size_t>(pos) * r.esize;
  }
  void* slot(const pass_plan& pp, int i) const {
    int s = pp.slot[static_cast<std::size_t>(i)];
    return s < 0 ? nullptr : scratch + static_cast<std::size_t>(s) * pl.slot_bytes;
  }
};

}  // namespace

void run_norm_rows(const plan& pl, index_t start, index_t end, unsigned char* scratch, runner_workspace& ws) {
  group_runner runner(pl, scratch, ws);
  const index_t step = pl.norm.pairs ? 2 : 1;
  for (index_t g = start; g < end; g += step) {
    const int count = g + 1 < end ? static_cast<int>(step) : 1;
    if (pl.norm.f64) runner.run_norm_rows<double>(g, count);
    else runner.run_norm_rows<float>(g, count);
  }
  if (pl.stream) stream_fence();  // the results must be visible once this callback returns
}

void run_one_tile_rows(const plan& pl, index_t start, index_t end, unsigned char* scratch, runner_workspace& ws) {
  group_runner runner(pl, scratch, ws);
  for (index_t g = start; g < end; ++g) runner.run_one_tile(g);
  if (pl.stream) stream_fence();  // the results must be visible once this callback returns
}

void run_row_walk(const plan& pl, index_t start, index_t end, unsigned char* scratch, runner_workspace& ws) {
  group_runner runner(pl, scratch, ws);
  for (index_t g = start; g < end; ++g) runner.run_group(g, g + 1 < end);
  if (pl.stream) stream_fence();  // the results must be visible once this callback returns
}

}  // namespace ct::detail::evaluator
