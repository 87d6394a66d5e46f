/// \file
/// The per-thread kernel settings: SIMD backend and FMA policy.
///
/// Like the executor, these are bindings of the calling thread, changed with RAII scopes.
/// Every scheduled operation captures them at the call site and re-establishes them inside
/// each executor callback, whichever thread runs it.
#pragma once

namespace ct {

struct tuning;  // ct/core/tuning.hpp

/// Which kernels run: portable scalar loops, or SIMD kernels for the best instruction set
/// found at run time (SSE4 / AVX2 / AVX-512 through Highway's dispatch).
enum class backend { scalar, simd };

/// Whether a*b+c in kernels is one fused multiply-add (one rounding) or a multiply and an
/// add (two roundings). Results differ in the last bits; each is deterministic.
enum class fma_policy { fused, separate };

/// The bindings one thread holds. Defaults: simd backend, fused multiply-add.
struct settings {
  /// The kernels that run.
  ct::backend backend = ct::backend::simd;
  /// Whether a*b+c is contracted into one fused multiply-add.
  ct::fma_policy fma = ct::fma_policy::fused;
  /// The blocking parameters (ct/core/tuning.hpp), bound by ct::tuning_scope; null means the
  /// process's (ct::process_tuning()). They change speed only, never results for one tuning.
  const ct::tuning* tuning = nullptr;
  /// Opt-in: a large expression without reductions (a*b+c, exp(x)) is split into groups of
  /// its outermost axis and run through the bound executor. Off by default: CONTRACT §4 leaves
  /// elementwise expressions unpartitioned. Results are the same bits either way (every element
  /// is computed alone); failures leave the destination unchanged either way.
  bool split_elementwise = false;
  /// Both settings equal.
  friend bool operator==(const settings&, const settings&) = default;
};

/// The settings in force on this thread.
settings current_settings() noexcept;
/// The backend in force on this thread.
inline ct::backend current_backend() noexcept { return current_settings().backend; }
/// The FMA policy in force on this thread.
inline ct::fma_policy current_fma() noexcept { return current_settings().fma; }

/// Binds both settings for the current thread until destroyed; the previous ones return.
class settings_scope {
 public:
  /// Binds s on this thread.
  explicit settings_scope(const settings& s) noexcept;
  /// Brings back the settings in force before; destroy scopes on their thread, in reverse order
  /// of creation.
  ~settings_scope();
  /// Not copyable: each binding belongs to one scope.
  settings_scope(const settings_scope&) = delete;
  /// Not assignable.
  settings_scope& operator=(const settings_scope&) = delete;

 private:
  settings previous_;
};

/// The name Highway gives the SIMD target backend::simd dispatches to on this CPU (such as
/// "AVX3_SPR", "AVX3", "AVX2"), for logs and benchmark records. The environment variable
/// CT_SIMD_TARGET (read once; Highway's names, any case) pins it to another target this CPU
/// can run, for experiments such as AVX2 kernels on an AVX-512 machine (docs/tuning.md); a name
/// that is not available makes the first operation throw ct::tuning_error listing the ones that are.
const char* simd_target_name() noexcept;

/// Binds split_elementwise for this thread (the other settings stay as they are): large
/// elementwise expressions then run through the bound executor (docs/executor.md).
class split_elementwise_scope {
 public:
  /// Turns splitting on (or off, with false) on this thread.
  explicit split_elementwise_scope(bool on = true) noexcept : scope_(with(on)) {}

 private:
  static settings with(bool on) noexcept {
    settings s = current_settings();
    s.split_elementwise = on;
    return s;
  }
  settings_scope scope_;
};

/// Binds only the backend (the FMA policy stays as it is).
class backend_scope {
 public:
  /// Binds backend b on this thread, keeping the current FMA policy.
  explicit backend_scope(ct::backend b) noexcept : scope_(with(b)) {}

 private:
  static settings with(ct::backend b) noexcept {
    settings s = current_settings();
    s.backend = b;
    return s;
  }
  settings_scope scope_;
};

/// Binds only the FMA policy (the backend stays as it is).
class fma_scope {
 public:
  /// Binds FMA policy f on this thread, keeping the current backend.
  explicit fma_scope(ct::fma_policy f) noexcept : scope_(with(f)) {}

 private:
  static settings with(ct::fma_policy f) noexcept {
    settings s = current_settings();
    s.fma = f;
    return s;
  }
  settings_scope scope_;
};

}  // namespace ct
