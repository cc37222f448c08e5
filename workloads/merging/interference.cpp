#include "merging/interference.h"

#include <cmath>
#include <limits>

namespace compatbench::merging {

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

}  // namespace

void InterferenceSums::add(const InterferenceSums& o) {
    interference += o.interference;
    dispersion += o.dispersion;
    cancellation += o.cancellation;
    count += o.count;
    sign_conflicts += o.sign_conflicts;
}

double InterferenceSums::sign_conflict() const {
    return count ? static_cast<double>(sign_conflicts) / static_cast<double>(count) : kNaN;
}

double InterferenceSums::mean_interference() const {
    return count ? interference / static_cast<double>(count) : kNaN;
}
double InterferenceSums::mean_dispersion() const {
    return count ? dispersion / static_cast<double>(count) : kNaN;
}
double InterferenceSums::rho() const {
    return interference > 0.0 ? cancellation / interference : kNaN;
}

double screening_score(double mean_interference, int k, double coef) {
    return coef * std::sqrt(mean_interference / static_cast<double>(k));
}

}  // namespace compatbench::merging
