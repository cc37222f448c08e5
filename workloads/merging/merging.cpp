#include "merging/merging.h"

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace compatbench::merging {

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

void check_lengths(std::span<const std::span<const float>> taus, std::size_t n) {
    for (std::size_t i = 0; i < taus.size(); ++i) {
        if (taus[i].size() != n)
            throw std::invalid_argument("task vector " + std::to_string(i) + " has " +
                                        std::to_string(taus[i].size()) + " values, expected " +
                                        std::to_string(n));
    }
}
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

InterferenceSums interference(std::span<const std::span<const float>> taus) {
    InterferenceSums s;
    if (taus.empty()) return s;
    const std::size_t n = taus[0].size();
    check_lengths(taus, n);
    const double k = static_cast<double>(taus.size());
    for (std::size_t j = 0; j < n; ++j) {
        double sum = 0.0, sum_abs = 0.0, sum_sq = 0.0;
        bool positive = false, negative = false;
        for (const auto& t : taus) {
            const double v = t[j];
            sum += v;
            sum_abs += std::abs(v);
            sum_sq += v * v;
            positive = positive || v > 0.0;
            negative = negative || v < 0.0;
        }
        s.sign_conflicts += positive && negative;
        const double mean = sum / k, mean_abs = sum_abs / k, mean_sq = sum_sq / k;
        // D = E[τ²] - E|τ|², C = E|τ|² - (Eτ)²: both >= 0 up to rounding; clamp it away.
        const double d = std::max(0.0, mean_sq - mean_abs * mean_abs);
        const double c = std::max(0.0, mean_abs * mean_abs - mean * mean);
        s.dispersion += d;
        s.cancellation += c;
        s.interference += d + c;
    }
    s.count = n;
    return s;
}

double screening_score(double mean_interference, int k, double coef) {
    return coef * std::sqrt(mean_interference / static_cast<double>(k));
}

void task_arithmetic(std::span<const float> base, std::span<const std::span<const float>> taus,
                     double coef, Normalize normalize, std::span<float> out) {
    check_lengths(taus, base.size());
    if (out.size() != base.size()) throw std::invalid_argument("task arithmetic: output size");
    const double w = normalize == Normalize::mean ? 1.0 / static_cast<double>(taus.size()) : 1.0;
    for (std::size_t j = 0; j < base.size(); ++j) {
        double delta = 0.0;
        for (const auto& t : taus) delta += t[j];
        out[j] = static_cast<float>(base[j] + coef * w * delta);
    }
}

std::vector<float> task_vector(std::span<const float> finetuned, std::span<const float> base) {
    if (finetuned.size() != base.size())
        throw std::invalid_argument("task vector: " + std::to_string(finetuned.size()) +
                                    " values against a base of " + std::to_string(base.size()));
    std::vector<float> t(base.size());
    for (std::size_t j = 0; j < base.size(); ++j) t[j] = finetuned[j] - base[j];
    return t;
}

}  // namespace compatbench::merging
