// Checks shared by the bindings that take int32 token bitmasks as ndarrays (the same checks as
// BitmaskRow in matcher.cc): a CPU int32 array of shape (rows, words) or (words,) whose rows are
// contiguous. Failures throw Error(kInvalidArgument), raised in Python as InvalidArgumentError.
#pragma once

#include <nanobind/ndarray.h>

#include <cstdint>
#include <string>

#include "bindings.h"
#include "xg2/errors.h"

namespace xg2::bindings {

struct BitmaskView {
  int32_t* data = nullptr;
  int64_t rows = 0;
  int64_t words = 0;
  int64_t row_stride = 0;  // in int32 elements
};

// require_2d: reject a 1-D array (draft-tree masks always have one row per node).
inline BitmaskView CheckBitmask(nb::ndarray<>& a, bool require_2d) {
  if (a.device_type() != nb::device::cpu::value) {
    throw Error(ErrorKind::kInvalidArgument, "bitmask must be a CPU array (numpy); got a device array");
  }
  if (a.dtype() != nb::dtype<int32_t>()) {
    throw Error(ErrorKind::kInvalidArgument, "bitmask dtype must be int32");
  }
  if (require_2d && a.ndim() != 2) {
    throw Error(ErrorKind::kInvalidArgument,
                "bitmask must have shape (rows, words); got ndim " + std::to_string(a.ndim()));
  }
  if (a.ndim() != 1 && a.ndim() != 2) {
    throw Error(ErrorKind::kInvalidArgument,
                "bitmask must have shape (batch, words) or (words,); got ndim " + std::to_string(a.ndim()));
  }
  BitmaskView v;
  v.rows = a.ndim() == 2 ? static_cast<int64_t>(a.shape(0)) : 1;
  v.words = static_cast<int64_t>(a.shape(a.ndim() - 1));
  v.data = static_cast<int32_t*>(a.data());
  if (v.rows == 0 || v.words == 0) return v;  // nothing to write; callers check indices
  if (v.words > 1 && a.stride(a.ndim() - 1) != 1) {
    throw Error(ErrorKind::kInvalidArgument, "bitmask rows must be contiguous");
  }
  v.row_stride = a.ndim() == 2 ? static_cast<int64_t>(a.stride(0)) : v.words;
  if (v.rows > 1 && (v.row_stride < 0 ? -v.row_stride : v.row_stride) < v.words) {
    throw Error(ErrorKind::kInvalidArgument, "bitmask rows overlap (a broadcast or strided view)");
  }
  v.data = static_cast<int32_t*>(a.data());
  return v;
}

// A temperatures buffer (xgrammar's batch_fill_temperature / traverse_draft_tree): a
// contiguous 1-D float32 CPU array. Returns its data and sets *size.
inline float* CheckTemperatures(nb::ndarray<>& a, int64_t* size) {
  if (a.device_type() != nb::device::cpu::value || a.dtype() != nb::dtype<float>() || a.ndim() != 1 ||
      (a.shape(0) > 1 && a.stride(0) != 1)) {
    throw Error(ErrorKind::kInvalidArgument,
                "the temperatures tensor must be a contiguous 1D float32 CPU array (got ndim " +
                    std::to_string(a.ndim()) + (a.dtype() == nb::dtype<float>() ? "" : ", not float32") + ")");
  }
  *size = static_cast<int64_t>(a.shape(0));
  return static_cast<float*>(a.data());
}

}  // namespace xg2::bindings
