// `compatbench compare A B`: are two results files the same, dataset by dataset and byte
// for byte? Run facts (/meta, /tasks) are left out unless --all.
#include <hdf5.h>

#include <iostream>
#include <set>
#include <vector>

#include "app/verbs.h"
#include "exec/signals.h"
#include "store/h5.h"

namespace compatbench {

namespace {

herr_t collect(hid_t, const char* name, const H5O_info_t* info, void* data) {
    if (info->type == H5O_TYPE_DATASET) static_cast<std::set<std::string>*>(data)->insert(name);
    return 0;
}

std::set<std::string> datasets(hid_t file, bool all) {
    std::set<std::string> names, kept;
    h5::check_herr(H5Ovisit(file, H5_INDEX_NAME, H5_ITER_INC, collect, &names), "list datasets");
    for (const auto& n : names) {
        if (!all && (n.rfind("meta/", 0) == 0 || n.rfind("tasks/", 0) == 0)) continue;
        kept.insert(n);
    }
    return kept;
}

// The dataset's type, shape and raw bytes, as one string.
std::string contents(hid_t file, const std::string& name) {
    h5::Handle d(h5::check(H5Dopen2(file, name.c_str(), H5P_DEFAULT), "open /" + name), H5Dclose);
    h5::Handle type(h5::check(H5Dget_type(d.get()), "type of /" + name), H5Tclose);
    h5::Handle space(h5::check(H5Dget_space(d.get()), "space of /" + name), H5Sclose);
    const hssize_t n = H5Sget_simple_extent_npoints(space.get());
    const std::size_t size = H5Tget_size(type.get());
    std::string bytes(static_cast<std::size_t>(n) * size, '\0');
    if (n > 0) {
        h5::check_herr(H5Dread(d.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, bytes.data()),
                       "read /" + name);
    }
    const int rank = H5Sget_simple_extent_ndims(space.get());
    std::vector<hsize_t> dims(static_cast<std::size_t>(std::max(rank, 0)));
    if (rank > 0) H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
    std::string header =
        "class" + std::to_string(H5Tget_class(type.get())) + ":" + std::to_string(size) + ":";
    for (hsize_t x : dims) header += std::to_string(x) + ",";
    return header + "|" + bytes;
}

}  // namespace

int verb_compare(const ComparePaths& paths) {
    h5::quiet_errors();
    try {
        h5::Handle a(
            h5::check(H5Fopen(paths.a.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), "open " + paths.a),
            H5Fclose);
        h5::Handle b(
            h5::check(H5Fopen(paths.b.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), "open " + paths.b),
            H5Fclose);
        const auto in_a = datasets(a.get(), paths.all);
        const auto in_b = datasets(b.get(), paths.all);
        std::size_t differ = 0;
        for (const auto& n : in_a) {
            if (!in_b.count(n)) {
                std::cout << "only in " << paths.a << ": /" << n << "\n";
                ++differ;
            } else if (contents(a.get(), n) != contents(b.get(), n)) {
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
