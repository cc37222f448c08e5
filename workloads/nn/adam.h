// AdamW (decoupled weight decay, bias-corrected moments) and a warm-up + cosine schedule.
#pragma once

#include <vector>

#include "nn/layers.h"

namespace compatbench::nn {

struct AdamConfig {
    double lr = 1e-3;
    double beta1 = 0.9;
    double beta2 = 0.999;
    double eps = 1e-8;
    double weight_decay = 0.0;  // applied to matrices (2-D parameters) only
};

// lr at `step` (0-based) of `total`: linear warm-up over `warmup` steps, then cosine decay
// to `min_ratio` * lr.
double scheduled_lr(double lr, long step, long total, long warmup, double min_ratio = 0.0);

template <class T>
class AdamW {
  public:
    AdamW(std::vector<Param<T>> params, AdamConfig config);
    // One update with learning rate `lr` (from the schedule); gradients are left as they are.
    void step(double lr);
    void zero_grad();
    long steps() const { return t_; }
    const std::vector<Param<T>>& params() const { return params_; }

  private:
    std::vector<Param<T>> params_;
    AdamConfig config_;
    std::vector<Vec<T>> m_, v_;
    long t_ = 0;
};

}  // namespace compatbench::nn
