#include "store/h5_read.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <set>

namespace compatbench::h5 {

namespace {
herr_t collect_datasets(hid_t, const char* name, const H5O_info_t* info, void* data) {
    if (info->type == H5O_TYPE_DATASET)
        static_cast<std::vector<std::string>*>(data)->push_back(name);
    return 0;
}
}  // namespace

ResultsReader::ResultsReader(const std::string& path) : path_(path) {
    quiet_errors();
    const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0) throw std::runtime_error(path + ": cannot open as an HDF5 results file");
    file_ = Handle(f, H5Fclose);
}

bool ResultsReader::exists(const std::string& object) const {
    // Every link along the path must exist (H5Lexists on a missing parent is an error).
    std::string at;
    std::size_t pos = 1;
    while (pos <= object.size()) {
        const std::size_t next = object.find('/', pos);
        at = object.substr(0, next == std::string::npos ? object.size() : next);
        if (H5Lexists(file_.get(), at.c_str(), H5P_DEFAULT) <= 0) return false;
        if (next == std::string::npos) break;
        pos = next + 1;
    }
    return true;
}

std::vector<std::string> ResultsReader::tables(const std::string& group) const {
    std::vector<std::string> names;
    if (!exists(group)) return {};
    Handle g(check(H5Gopen2(file_.get(), group.c_str(), H5P_DEFAULT), path_ + ": open " + group),
             H5Gclose);
    check_herr(H5Ovisit(g.get(), H5_INDEX_NAME, H5_ITER_INC, collect_datasets, &names),
               path_ + ": list " + group);
    std::set<std::string> out;
    for (const auto& n : names) {
        const std::size_t slash = n.rfind('/');
        std::string table = group == "/" ? "" : group;
        if (slash != std::string::npos) {
            table += '/';
            table.append(n, 0, slash);
        }
        out.insert(std::move(table));
    }
    return {out.begin(), out.end()};
}

std::vector<std::string> ResultsReader::columns(const std::string& table) const {
    std::vector<std::string> names;
    Handle g(check(H5Gopen2(file_.get(), table.c_str(), H5P_DEFAULT), path_ + ": open " + table),
             H5Gclose);
    check_herr(H5Ovisit(g.get(), H5_INDEX_NAME, H5_ITER_INC, collect_datasets, &names),
               path_ + ": list " + table);
    names.erase(
        std::remove_if(names.begin(), names.end(),
                       [](const std::string& n) { return n.find('/') != std::string::npos; }),
        names.end());
    std::sort(names.begin(), names.end());
    return names;
}

bool ResultsReader::is_string(const std::string& dataset) const {
    Handle d(
        check(H5Dopen2(file_.get(), dataset.c_str(), H5P_DEFAULT), path_ + ": open " + dataset),
        H5Dclose);
    Handle t(check(H5Dget_type(d.get()), path_ + ": type of " + dataset), H5Tclose);
    return H5Tget_class(t.get()) == H5T_STRING;
}

std::vector<double> ResultsReader::numbers(const std::string& dataset) const {
    Handle d(
        check(H5Dopen2(file_.get(), dataset.c_str(), H5P_DEFAULT), path_ + ": open " + dataset),
        H5Dclose);
    Handle t(check(H5Dget_type(d.get()), path_ + ": type of " + dataset), H5Tclose);
    Handle s(check(H5Dget_space(d.get()), path_ + ": space of " + dataset), H5Sclose);
    const auto n =
        static_cast<std::size_t>(std::max<hssize_t>(0, H5Sget_simple_extent_npoints(s.get())));
    std::vector<double> out(n);
    if (n == 0) return out;
    const H5T_class_t cls = H5Tget_class(t.get());
    if (cls == H5T_FLOAT) {
        check_herr(H5Dread(d.get(), H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, out.data()),
                   path_ + ": read " + dataset);
    } else if (cls == H5T_INTEGER) {
        const bool is_signed = H5Tget_sign(t.get()) == H5T_SGN_2;
        if (is_signed) {
            std::vector<std::int64_t> v(n);
            check_herr(H5Dread(d.get(), H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()),
                       path_ + ": read " + dataset);
            for (std::size_t i = 0; i < n; ++i)
                out[i] = v[i] == std::numeric_limits<std::int64_t>::min()
                             ? std::numeric_limits<double>::quiet_NaN()
                             : static_cast<double>(v[i]);
        } else {
            std::vector<std::uint64_t> v(n);
            check_herr(H5Dread(d.get(), H5T_NATIVE_UINT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()),
                       path_ + ": read " + dataset);
            for (std::size_t i = 0; i < n; ++i)
                out[i] = v[i] == std::numeric_limits<std::uint64_t>::max()
                             ? std::numeric_limits<double>::quiet_NaN()
                             : static_cast<double>(v[i]);
        }
    } else {
        throw std::runtime_error(path_ + ": " + dataset + " is not numeric");
    }
    return out;
}

std::vector<std::string> ResultsReader::strings(const std::string& dataset) const {
    Handle d(
        check(H5Dopen2(file_.get(), dataset.c_str(), H5P_DEFAULT), path_ + ": open " + dataset),
        H5Dclose);
    Handle t(check(H5Dget_type(d.get()), path_ + ": type of " + dataset), H5Tclose);
    if (H5Tget_class(t.get()) != H5T_STRING || H5Tis_variable_str(t.get()) > 0)
        throw std::runtime_error(path_ + ": " + dataset + " is not a fixed-length string column");
    Handle s(check(H5Dget_space(d.get()), path_ + ": space of " + dataset), H5Sclose);
    const auto n =
        static_cast<std::size_t>(std::max<hssize_t>(0, H5Sget_simple_extent_npoints(s.get())));
    const std::size_t w = H5Tget_size(t.get());
    std::string bytes(n * w, '\0');
    if (n > 0)
        check_herr(H5Dread(d.get(), t.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, bytes.data()),
                   path_ + ": read " + dataset);
    std::vector<std::string> out;
    for (std::size_t i = 0; i < n; ++i) {
        std::string v = bytes.substr(i * w, w);
        v.erase(std::find(v.begin(), v.end(), '\0'), v.end());
        out.push_back(std::move(v));
    }
    return out;
}

std::vector<std::string> ResultsReader::datasets() const {
    std::vector<std::string> names;
    check_herr(H5Ovisit(file_.get(), H5_INDEX_NAME, H5_ITER_INC, collect_datasets, &names),
               path_ + ": list datasets");
    std::sort(names.begin(), names.end());
    return names;
}

std::string ResultsReader::raw(const std::string& dataset) const {
    const std::string what = path_ + ": /" + dataset;
    Handle d(check(H5Dopen2(file_.get(), dataset.c_str(), H5P_DEFAULT), "open " + what), H5Dclose);
    Handle type(check(H5Dget_type(d.get()), "type of " + what), H5Tclose);
    Handle space(check(H5Dget_space(d.get()), "space of " + what), H5Sclose);
    const hssize_t n = H5Sget_simple_extent_npoints(space.get());
    const std::size_t size = H5Tget_size(type.get());
    std::string bytes(static_cast<std::size_t>(n) * size, '\0');
    if (n > 0)
        check_herr(H5Dread(d.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, bytes.data()),
                   "read " + what);
    const int rank = H5Sget_simple_extent_ndims(space.get());
    std::vector<hsize_t> dims(static_cast<std::size_t>(std::max(rank, 0)));
    if (rank > 0) H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
    std::string header =
        "class" + std::to_string(H5Tget_class(type.get())) + ":" + std::to_string(size) + ":";
    for (hsize_t x : dims) header += std::to_string(x) + ",";
    return header + "|" + bytes;
}

}  // namespace compatbench::h5
