/// \file
/// The exception hierarchy. Every error ct raises derives from ct::error, and its message
/// names the operation and the offending shapes, axes, types or ranges.
#pragma once
#include <stdexcept>
#include <string>

namespace ct {

/// Base of every ct exception.
class error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Shapes do not fit: broadcasting, destination shape, reshape, overflowing element count.
class shape_error : public error {
 public:
  using error::error;
};

/// An axis is out of range or repeated.
class axis_error : public shape_error {
 public:
  using shape_error::shape_error;
};

/// An element index or slice is out of bounds.
class index_error : public error {
 public:
  using error::error;
};

/// Element types do not fit (e.g. a destination of the wrong type).
class dtype_error : public error {
 public:
  using error::error;
};

/// An executor broke its contract (a range outside [0, count), missing/overlapping coverage).
class executor_error : public error {
 public:
  using error::error;
};

/// A reduction that has no value over empty axes: max, min, argmax, argmin (and logsumexp,
/// which contains a max). mean over empty axes is NaN instead (0/0).
class empty_reduction_error : public error {
 public:
  using error::error;
};

/// A tuning specification (the CT_TUNING environment variable, ct::parse_tuning) does not
/// parse: an unknown name, a missing '=', or a size that is not a positive number of bytes.
class tuning_error : public error {
 public:
  using error::error;
};

}  // namespace ct
