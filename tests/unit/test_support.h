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

// The whole text of a file ("" when it cannot be read).
inline std::string read_file(const std::string& path) {
    std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "rb"), std::fclose);
    std::string out;
    char buf[4096];
    std::size_t n = 0;
    while (f && (n = std::fread(buf, 1, sizeof buf, f.get())) > 0) out.append(buf, n);
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
