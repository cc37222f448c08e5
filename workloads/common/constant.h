// A count known only at run time, turned into a compile-time constant so that loops over
// it unroll (the merging kernels' K models).
#pragma once

#include <cstddef>
#include <type_traits>
#include <utility>

namespace compatbench {

// Calls f(std::integral_constant<int, K>{}) with K = k when 1 <= k <= Max and returns
// true; returns false, calling nothing, for any other k.
template <int Max, class F>
bool with_constant(std::size_t k, F&& f) {
    return [&]<int... I>(std::integer_sequence<int, I...>) {
        return ((k == static_cast<std::size_t>(I + 1) &&
                 (f(std::integral_constant<int, I + 1>{}), true)) ||
                ...);
    }
    (std::make_integer_sequence<int, Max>{});
}

}  // namespace compatbench
