// `compatbench bench knn`: the mutual k-NN kernel (methods.md §1.1: two models' k-NN lists
// and their overlap) beside a numpy implementation of the same definition, on the same
// matrices, in the same run. Prints both times, both ease values and the ratio.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>

#include "app/verbs.h"
#include "exec/signals.h"
#include "nn/random.h"
#include "similarity/similarity.h"

namespace compatbench {

namespace {
using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

void write_raw(const fs::path& path, const MatF& m) {
    const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> r = m;
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(r.data()),
              static_cast<std::streamsize>(r.size() * static_cast<Eigen::Index>(sizeof(float))));
    if (!out) throw std::runtime_error(path.string() + ": cannot write");
}

std::string capture(const std::string& cmd) {
    std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(cmd.c_str(), "r"), pclose);
    if (!pipe) throw std::runtime_error("cannot run: " + cmd);
    std::string out;
    char buf[4096];
    while (fgets(buf, sizeof buf, pipe.get())) out += buf;
    return out;
}
}  // namespace

int verb_bench_knn(const KnnBenchOptions& o) {
    Eigen::setNbThreads(1);
    // Two related feature sets: B is a random linear map of A plus noise, so that the
    // neighbourhoods overlap partly, as two real models' do.
    nn::Random rng(2026);
    MatF a(o.n, o.d), map(o.d, o.d), noise(o.n, o.d);
    for (auto* m : {&a, &map, &noise})
        for (Eigen::Index j = 0; j < m->cols(); ++j)
            for (Eigen::Index i = 0; i < m->rows(); ++i)
                (*m)(i, j) = static_cast<float>(rng.normal());
    const MatF b = a * map / std::sqrt(static_cast<float>(o.d)) + 0.5f * noise;

    double best = 1e300, ease = 0.0;
    for (int r = 0; r < o.repeats; ++r) {
        const auto t0 = Clock::now();
        const auto la = similarity::knn_lists(a, o.k, o.block);
        const auto lb = similarity::knn_lists(b, o.k, o.block);
        ease = similarity::mutual_knn(la, lb, o.k);
        best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count());
    }
    std::printf("compatbench  n=%d d=%d k=%d: %.4f s (best of %d, 1 thread), ease %.6f\n", o.n, o.d,
                o.k, best, o.repeats, ease);
    if (o.python.empty()) return kExitOk;

    const fs::path dir =
        fs::temp_directory_path() / ("compatbench-knn-" + std::to_string(getpid()));
    fs::create_directories(dir);
    write_raw(dir / "a.f32", a);
    write_raw(dir / "b.f32", b);
    const std::string cmd = o.python + " " + o.script + " " + (dir / "a.f32").string() + " " +
                            (dir / "b.f32").string() + " " + std::to_string(o.n) + " " +
                            std::to_string(o.d) + " " + std::to_string(o.k) + " " +
                            std::to_string(o.repeats);
    const std::string text = capture(cmd);
    fs::remove_all(dir);
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(text);
    } catch (const std::exception&) {
        std::fprintf(stderr, "numpy reference failed (%s): %s\n", cmd.c_str(), text.c_str());
        return kExitTasksFailed;
    }
    const double np_seconds = j.at("seconds").get<double>();
    const double np_ease = j.at("ease").get<double>();
    std::printf(
        "numpy        n=%d d=%d k=%d: %.4f s (best of %d, BLAS threads as installed), "
        "ease %.6f\n",
        o.n, o.d, o.k, np_seconds, o.repeats, np_ease);
    std::printf(
        "ratio numpy / compatbench: %.2fx; ease differs by %.2e (float32 GEMM "
        "rounding can reorder near-ties)\n",
        np_seconds / best, std::abs(np_ease - ease));
    return kExitOk;
}

}  // namespace compatbench
