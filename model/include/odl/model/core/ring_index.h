// SPDX-License-Identifier: MIT
// Ring index arithmetic. A ring's size is whatever the driver programmed
// (not a power of two), so `% size` is a division: 20-40 cycles, and a
// frame takes about ten of them on its way through driver and NHI. An
// index is almost always already in range, so compare first.
#pragma once

namespace odl::model {

/// @v % @size, for unsigned @v and @size > 0; exactly that for every @v,
/// without a division when @v < 2 * @size.
constexpr unsigned wrap_index(unsigned v, unsigned size) {
    return v < size ? v : v - size < size ? v - size : v % size;
}

}  // namespace odl::model
