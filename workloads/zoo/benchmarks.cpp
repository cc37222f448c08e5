#include "zoo/benchmarks.h"

#include <stdexcept>

#include "common/hash.h"

namespace compatbench::zoo {

namespace {
int pair_sign(const Mat& m, Eigen::Index row, int c0, int c1) {
    const int last = static_cast<int>(m.cols()) - 1;
    return (m(row, std::min(c0, last)) > 0 ? 1 : 0) + (m(row, std::min(c1, last)) > 0 ? 2 : 0);
}

// A fixed, arbitrary fact about a concept (the same for every scene of it).
int concept_fact(std::uint64_t world_seed, const std::string& fact, int concept_id, int classes) {
    return static_cast<int>(
        splitmix64(world_seed ^ fnv1a64(fact) ^ static_cast<std::uint64_t>(concept_id)) %
        static_cast<std::uint64_t>(classes));
}
}  // namespace

std::vector<std::string> benchmark_categories() {
    return {"General", "Knowledge", "OCR&Chart", "Vision-Centric"};
}

std::vector<Benchmark> pool_benchmarks(const WorldSpec& spec) {
    return {
        {"concept", "General", spec.concepts},
        {"concept_group", "General", 8},
        {"semantic_axes_a", "General", 4},
        {"semantic_axes_b", "General", 4},
        {"attr_a", "Knowledge", 4},
        {"attr_b", "Knowledge", 3},
        {"attr_c", "Knowledge", 5},
        {"fact_x_semantic", "Knowledge", 4},
        {"ocr_01", "OCR&Chart", 4},
        {"ocr_23", "OCR&Chart", 4},
        {"ocr_45", "OCR&Chart", 4},
        {"chart_compare", "OCR&Chart", 2},
        {"geo_argmax", "Vision-Centric", spec.geometry_dim},
        {"geo_sign_a", "Vision-Centric", 4},
        {"geo_sign_b", "Vision-Centric", 4},
        {"style_geo", "Vision-Centric", 4},
    };
}

std::vector<int> benchmark_labels(const Benchmark& b, const Scenes& s, const WorldSpec& spec) {
    std::vector<int> y(s.size());
    for (std::size_t k = 0; k < s.size(); ++k) {
        const auto i = static_cast<Eigen::Index>(k);
        const int c = s.concept_id[k];
        const std::string& n = b.name;
        if (n == "concept") {
            y[k] = c;
        } else if (n == "concept_group") {
            y[k] = c * 8 / spec.concepts;
        } else if (n == "semantic_axes_a") {
            y[k] = pair_sign(s.semantic, i, 0, 1);
        } else if (n == "semantic_axes_b") {
            y[k] = pair_sign(s.semantic, i, 2, 3);
        } else if (n == "attr_a" || n == "attr_b" || n == "attr_c") {
            y[k] = concept_fact(spec.seed, n, c, b.classes);
        } else if (n == "fact_x_semantic") {
            y[k] = concept_fact(spec.seed, n, c, 2) + 2 * (s.semantic(i, 0) > 0 ? 1 : 0);
        } else if (n == "ocr_01") {
            y[k] = pair_sign(s.detail, i, 0, 1);
        } else if (n == "ocr_23") {
            y[k] = pair_sign(s.detail, i, 2, 3);
        } else if (n == "ocr_45") {
            y[k] = pair_sign(s.detail, i, 4, 5);
        } else if (n == "chart_compare") {
            const Eigen::Index h = s.detail.cols() / 2;
            y[k] = s.detail.row(i).head(h).sum() > s.detail.row(i).tail(s.detail.cols() - h).sum()
                       ? 1
                       : 0;
        } else if (n == "geo_argmax") {
            Eigen::Index arg = 0;
            s.geometry.row(i).maxCoeff(&arg);
            y[k] = static_cast<int>(arg);
        } else if (n == "geo_sign_a") {
            y[k] = pair_sign(s.geometry, i, 0, 1);
        } else if (n == "geo_sign_b") {
            y[k] = pair_sign(s.geometry, i, 2, 3);
        } else if (n == "style_geo") {
            y[k] = (s.style(i, 0) > 0 ? 1 : 0) + 2 * (s.geometry(i, 0) > 0 ? 1 : 0);
        } else {
            throw std::invalid_argument("unknown benchmark '" + n + "'");
        }
    }
    return y;
}

}  // namespace compatbench::zoo
