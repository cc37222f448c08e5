#include "stats/verdict.h"

#include <boost/math/distributions/normal.hpp>
#include <cmath>

#include "stats/stat_result.h"

namespace compatbench::stats {

const char* verdict_name(Verdict v) {
    switch (v) {
        case Verdict::agrees:
            return "agrees";
        case Verdict::disagrees:
            return "disagrees";
        case Verdict::inconclusive:
            return "inconclusive";
        case Verdict::untested:
            break;
    }
    return "untested";
}

Verdict judge(double lo, double hi, const Band& band) {
    if (std::isnan(lo) || std::isnan(hi) || lo > hi) return Verdict::untested;
    if (lo >= band.lo && hi <= band.hi) return Verdict::agrees;
    if (hi < band.lo || lo > band.hi) return Verdict::disagrees;
    return Verdict::inconclusive;
}

std::pair<double, double> se_interval(double value, double se, double level) {
    if (!std::isfinite(value) || !std::isfinite(se) || se < 0) return {kNaN, kNaN};
    const double z = boost::math::quantile(boost::math::normal(), (1.0 + level) / 2.0);
    return {value - z * se, value + z * se};
}

}  // namespace compatbench::stats
