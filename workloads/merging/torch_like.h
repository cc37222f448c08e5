// Internal to merging/: torch's arithmetic in one dtype, as in_dtype.cpp and ram_fusion.cpp
// repeat it (in_dtype.h says what torch does), and one tensor's inputs held whole.
#pragma once

#include <span>
#include <vector>

#include "merging/in_dtype.h"

namespace compatbench::merging::torch_like {

using Values = std::vector<float>;

// torch's arithmetic in one dtype: r(x) rounds a float32 result to it; number(x) a Python
// number as an addition meets it; times(x, s) and over(x, s) a tensor's value multiplied or
// divided by a Python number.
struct Torch {
    Arithmetic a;
    float operator()(float x) const { return round_to(a, x); }
    float number(double x) const { return round_to(a, static_cast<float>(x)); }
    float times(float x, double s) const { return round_to(a, x * static_cast<float>(s)); }
    float over(float x, double s) const { return round_to(a, x / static_cast<float>(s)); }
};

// One tensor's inputs as mergekit holds them after loading: each converted to the dtype.
struct Inputs {
    Values base;
    std::vector<Values> x;
    std::size_t n() const { return base.size(); }
    std::vector<std::span<const float>> models() const { return {x.begin(), x.end()}; }
};

// Σ_j f(j) over [begin, end) as torch reduces a tensor: in float32 (here in double, then
// rounded to float32), the result rounded to the dtype.
template <class F>
float reduced(Torch r, std::size_t begin, std::size_t end, F&& f) {
    double s = 0.0;
    for (std::size_t j = begin; j < end; ++j) s += f(j);
    return r(static_cast<float>(s));
}

}  // namespace compatbench::merging::torch_like
