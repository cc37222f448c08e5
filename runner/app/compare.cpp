// `compatbench compare A B`: are two results files the same, dataset by dataset and byte
// for byte? Run facts (/meta, /tasks) are left out unless --all.
#include <iostream>
#include <set>
#include <vector>

#include "app/verbs.h"
#include "exec/signals.h"
#include "store/h5_read.h"

namespace compatbench {

namespace {
// The datasets compared: every one, or (not `all`) those outside /meta and /tasks.
std::set<std::string> datasets(const h5::ResultsReader& file, bool all) {
    std::set<std::string> kept;
    for (const auto& n : file.datasets()) {
        if (!all && (n.rfind("meta/", 0) == 0 || n.rfind("tasks/", 0) == 0)) continue;
        kept.insert(n);
    }
    return kept;
}
}  // namespace

int verb_compare(const ComparePaths& paths) {
    try {
        const h5::ResultsReader a(paths.a), b(paths.b);
        const auto in_a = datasets(a, paths.all);
        const auto in_b = datasets(b, paths.all);
        std::size_t differ = 0;
        for (const auto& n : in_a) {
            if (!in_b.count(n)) {
                std::cout << "only in " << paths.a << ": /" << n << "\n";
                ++differ;
            } else if (a.raw(n) != b.raw(n)) {
                std::cout << "differs: /" << n << "\n";
                ++differ;
            }
        }
        for (const auto& n : in_b) {
            if (!in_a.count(n)) {
                std::cout << "only in " << paths.b << ": /" << n << "\n";
                ++differ;
            }
        }
        if (differ == 0) {
            std::cout << "identical: " << in_a.size() << " datasets"
                      << (paths.all ? "" : " (run facts in /meta and /tasks not compared)") << "\n";
            return kExitOk;
        }
        std::size_t both = 0;  // out of every dataset of either file
        for (const auto& n : in_a) both += in_b.count(n);
        std::cout << differ << " of " << in_a.size() + in_b.size() - both << " datasets differ\n";
        return kExitTasksFailed;
    } catch (const std::exception& e) {
        std::cerr << "compatbench compare: " << e.what() << "\n";
        return kExitBadInput;
    }
}

}  // namespace compatbench
