#include "merging/operators.h"

#include <fnmatch.h>

#include <iterator>
#include <stdexcept>

namespace compatbench::merging {

namespace {

constexpr const char* kNames[] = {"task_arithmetic", "ties",        "dare",       "slerp",
                                  "model_stock",     "prism",       "prism_hard", "norm_matched",
                                  "della",           "breadcrumbs", "iso_c",      "tsv"};
constexpr std::size_t kDefaultMethods = 8;  // up to norm_matched

}  // namespace

const char* method_name(Method m) {
    switch (m) {
        case Method::generalized:
            return "generalized";
        case Method::linear:
            return "linear";
        case Method::passthrough:
            return "passthrough";
        case Method::nearswap:
            return "nearswap";
        case Method::sce:
            return "sce";
        case Method::multislerp:
            return "multislerp";
        case Method::nuslerp:
            return "nuslerp";
        case Method::karcher:
            return "karcher";
        case Method::ram:
            return "ram";
        case Method::ramplus_tl:
            return "ramplus_tl";
        case Method::arcee_fusion:
            return "arcee_fusion";
        default:
            return kNames[static_cast<int>(m)];
    }
}

const std::vector<std::string>& method_names() {
    static const std::vector<std::string> names(std::begin(kNames), std::end(kNames));
    return names;
}

const std::vector<std::string>& default_method_names() {
    static const std::vector<std::string> names(std::begin(kNames),
                                                std::begin(kNames) + kDefaultMethods);
    return names;
}

bool reads_merge_rho(Method m) {
    return m == Method::prism || m == Method::prism_hard || m == Method::norm_matched;
}

Method method_from_name(const std::string& name) {
    for (std::size_t i = 0; i < std::size(kNames); ++i)
        if (name == kNames[i]) return static_cast<Method>(i);
    std::string known;
    for (const char* n : kNames) known += (known.empty() ? "" : ", ") + std::string(n);
    throw std::invalid_argument("unknown merge method '" + name + "' (known: " + known + ")");
}

bool in_scope(const std::string& name, const std::vector<std::string>& patterns) {
    if (patterns.empty()) return true;
    for (const auto& p : patterns)
        if (fnmatch(p.c_str(), name.c_str(), 0) == 0) return true;
    return false;
}

}  // namespace compatbench::merging
