// Helpers shared by the unit tests.
#pragma once

#include <cstdio>
#include <memory>
#include <string>

#include "common/eigen.h"
#include "nn/random.h"

namespace compatbench::test {

// The standard output of a shell command.
inline std::string run_command(const std::string& cmd) {
    std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(cmd.c_str(), "r"), pclose);
    std::string out;
    char buf[4096];
    while (pipe && fgets(buf, sizeof buf, pipe.get())) out += buf;
    return out;
}

// An n x d matrix of seeded standard normal draws.
inline Eigen::MatrixXf random_matrix(int n, int d, std::uint64_t seed) {
    nn::Random rng(seed);
    Eigen::MatrixXf m(n, d);
    for (int j = 0; j < d; ++j)
        for (int i = 0; i < n; ++i) m(i, j) = static_cast<float>(rng.normal());
    return m;
}

}  // namespace compatbench::test
