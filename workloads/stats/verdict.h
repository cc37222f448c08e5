// Three-valued verdicts of a measured interval against a band fixed before the run
// (methods.md §5.3): `agrees` when the interval lies inside the band, `disagrees` when it lies
// wholly outside, `inconclusive` when it straddles an edge, `untested` when there is no
// interval. An interval that is too wide to tell can never agree.
#pragma once

#include <limits>
#include <string>
#include <utility>

namespace compatbench::stats {

enum class Verdict { agrees, disagrees, inconclusive, untested };

const char* verdict_name(Verdict v);

// A closed band [lo, hi]; an open side is ±infinity ("at least 0": [0, inf]).
struct Band {
    double lo = -std::numeric_limits<double>::infinity();
    double hi = std::numeric_limits<double>::infinity();
};

Verdict judge(double lo, double hi, const Band& band);

// The interval value ± z·se of a point value from its own standard error, z the two-sided
// normal quantile of `level`; NaN when se is not a finite, non-negative number.
std::pair<double, double> se_interval(double value, double se, double level = 0.95);

}  // namespace compatbench::stats
