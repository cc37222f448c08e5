#include "nn/adam.h"

#include <cmath>

namespace compatbench::nn {

double scheduled_lr(double lr, long step, long total, long warmup, double min_ratio) {
    if (warmup > 0 && step < warmup)
        return lr * static_cast<double>(step + 1) / static_cast<double>(warmup);
    const long span = std::max(1L, total - warmup);
    const double progress =
        std::min(1.0, static_cast<double>(step - warmup) / static_cast<double>(span));
    const double cosine = 0.5 * (1.0 + std::cos(3.141592653589793 * progress));
    return lr * (min_ratio + (1.0 - min_ratio) * cosine);
}

template <class T>
AdamW<T>::AdamW(std::vector<Param<T>> params, AdamConfig config)
    : params_(std::move(params)), config_(config) {
    for (const auto& p : params_) {
        m_.push_back(Vec<T>::Zero(p.size));
        v_.push_back(Vec<T>::Zero(p.size));
    }
}

template <class T>
void AdamW<T>::step(double lr) {
    ++t_;
    const T b1 = static_cast<T>(config_.beta1), b2 = static_cast<T>(config_.beta2);
    const T c1 = static_cast<T>(1.0 - std::pow(config_.beta1, static_cast<double>(t_)));
    const T c2 = static_cast<T>(1.0 - std::pow(config_.beta2, static_cast<double>(t_)));
    const T step = static_cast<T>(lr), eps = static_cast<T>(config_.eps);
    for (std::size_t k = 0; k < params_.size(); ++k) {
        auto& p = params_[k];
        Eigen::Map<Vec<T>> value(p.value, p.size);
        Eigen::Map<const Vec<T>> grad(p.grad, p.size);
        m_[k] = b1 * m_[k] + (1 - b1) * grad;
        v_[k] = b2 * v_[k] + (1 - b2) * grad.cwiseAbs2();
        const T decay = p.shape.size() >= 2 ? static_cast<T>(config_.weight_decay) : T(0);
        value.array() -= step * ((m_[k].array() / c1) / (exact_sqrt(v_[k].array() / c2) + eps) +
                                 decay * value.array());
    }
}

template <class T>
void AdamW<T>::zero_grad() {
    for (auto& p : params_) Eigen::Map<Vec<T>>(p.grad, p.size).setZero();
}

template class AdamW<float>;
template class AdamW<double>;

}  // namespace compatbench::nn
