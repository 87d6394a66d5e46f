// bench/expr/eigen_peer.hpp — the Eigen Tensor peer of bench_expr, behind plain functions.
//
// eigen_peer.cpp is compiled into one shared library per flag set (project flags, and
// -march=native when available), each with hidden visibility, so that Eigen's templates
// compiled with different instruction sets never merge at link time (ODR). Every variant
// exports the same functions in its own namespace, declared here.
#pragma once
#include <cstdint>

#define CT_EIGEN_PEER_DECLARE(NS)                                                                               \
  namespace NS {                                                                                                \
  /* threads == 1: Eigen::DefaultDevice; otherwise Eigen::ThreadPoolDevice over an Eigen::ThreadPool. */       \
  void* make(int threads);                                                                                      \
  void destroy(void* ctx);                                                                                      \
  const char* describe();                                                                                       \
  void softmax(void* ctx, const float* x, float* y, long rows, long cols);                                      \
  void log_softmax(void* ctx, const float* x, float* y, long rows, long cols);                                  \
  void layer_norm(void* ctx, const float* x, const float* w, const float* b, float* y, long rows, long cols,     \
                  float eps);                                                                                   \
  void logsumexp(void* ctx, const float* x, float* y, long rows, long cols);                                    \
  void argmax(void* ctx, const float* x, std::int64_t* y, long rows, long cols);                                \
  void sum_last(void* ctx, const float* x, float* y, long rows, long cols);                                     \
  void sum_first(void* ctx, const float* x, float* y, long rows, long cols);                                    \
  void muladd(void* ctx, const float* a, const float* b, const float* c, float* y, long n);                     \
  }

#if CT_BENCH_EIGEN_BASE
CT_EIGEN_PEER_DECLARE(eigen_base)
#endif
#if CT_BENCH_EIGEN_NATIVE
CT_EIGEN_PEER_DECLARE(eigen_native)
#endif
