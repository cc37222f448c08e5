// A small, platform-independent random source (std distributions differ between standard
// libraries; a model must be the same bytes everywhere).
#pragma once

#include <cmath>
#include <cstdint>

#include "common/hash.h"

namespace compatbench::nn {

class Random {
  public:
    explicit Random(std::uint64_t seed) : state_(splitmix64(seed)) {}
    std::uint64_t next() { return splitmix64(state_++); }
    double uniform() { return unit_double(next()); }  // [0, 1)
    double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
    std::uint64_t below(std::uint64_t n) { return n == 0 ? 0 : next() % n; }
    double normal() {                       // Box-Muller, one value per call
        const double u1 = 1.0 - uniform();  // (0, 1]
        const double u2 = uniform();
        return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
    }

  private:
    std::uint64_t state_;
};

}  // namespace compatbench::nn
