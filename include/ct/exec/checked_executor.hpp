/// \file
/// A debugging wrapper that verifies an executor's coverage.
#pragma once
#include "ct/exec/executor.hpp"

namespace ct {

/// Wraps inner so that every call verifies the executor obligations that ct itself does not
/// track: each range lies in [0, count), no group is run twice (overlap) and, when inner
/// returns, every group was run (coverage). A violation raises ct::executor_error naming the
/// range or the first missing group. Costs one byte per group per call: for tests and
/// debugging, not production. ct::error when inner is empty.
executor checked_executor(executor inner);

}  // namespace ct
