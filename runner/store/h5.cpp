#include "store/h5.h"

#include <algorithm>
#include <cstring>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace compatbench::h5 {

hid_t check(hid_t status, const std::string& what) {
    if (status < 0) throw std::runtime_error("HDF5: " + what + " failed");
    return status;
}

void check_herr(herr_t status, const std::string& what) {
    if (status < 0) throw std::runtime_error("HDF5: " + what + " failed");
}

void quiet_errors() { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); }

namespace {
std::set<std::string>& shared_files() {  // the name of each file marked shared
    static std::set<std::string> files;
    return files;
}
std::string file_name(hid_t id) {  // of the file holding `id`
    const ssize_t n = H5Fget_name(id, nullptr, 0);
    if (n <= 0) return {};
    std::string name(static_cast<std::size_t>(n) + 1, '\0');
    H5Fget_name(id, name.data(), name.size());
    name.resize(static_cast<std::size_t>(n));
    return name;
}
}  // namespace

void mark_shared(hid_t file, bool shared) {
    if (shared)
        shared_files().insert(file_name(file));
    else
        shared_files().erase(file_name(file));
}

// Local calls only: asking HDF5 for the file's access list would duplicate its communicator,
// which is collective; a file's name is local.
bool in_shared_file(hid_t id) {
    if (id < 0 || shared_files().empty()) return false;
    const H5I_type_t type = H5Iget_type(id);
    if (type != H5I_FILE && type != H5I_DATASET && type != H5I_GROUP && type != H5I_ATTR)
        return false;
    return shared_files().count(file_name(id)) > 0;
}

Handle file_type(const ColumnSpec& column) {
    switch (column.type) {
        case ColumnType::f64:
            return {check(H5Tcopy(H5T_IEEE_F64LE), "copy f64 type"), H5Tclose};
        case ColumnType::i64:
            return {check(H5Tcopy(H5T_STD_I64LE), "copy i64 type"), H5Tclose};
        case ColumnType::u64:
            return {check(H5Tcopy(H5T_STD_U64LE), "copy u64 type"), H5Tclose};
        case ColumnType::str: {
            Handle t(check(H5Tcopy(H5T_C_S1), "copy string type"), H5Tclose);
            check_herr(H5Tset_size(t.get(), column.width == 0 ? 1 : column.width),
                       "set string width of column " + column.name);
            check_herr(H5Tset_strpad(t.get(), H5T_STR_NULLPAD), "set string padding");
            return t;
        }
    }
    throw std::logic_error("unknown column type");
}

hid_t memory_type(ColumnType type) {
    switch (type) {
        case ColumnType::f64:
            return H5T_NATIVE_DOUBLE;
        case ColumnType::i64:
            return H5T_NATIVE_INT64;
        case ColumnType::u64:
            return H5T_NATIVE_UINT64;
        case ColumnType::str:
            break;
    }
    throw std::logic_error("memory_type of a string column");
}

namespace {
Handle untimed_gcpl() {
    Handle gcpl(check(H5Pcreate(H5P_GROUP_CREATE), "create group property list"), H5Pclose);
    check_herr(H5Pset_obj_track_times(gcpl.get(), 0), "turn off group time stamps");
    return gcpl;
}

// Packs values into the memory layout of the column's type.
std::vector<char> pack(const ColumnSpec& column, const Value* values, std::size_t n,
                       std::size_t stride) {
    const std::size_t width =
        column.type == ColumnType::str ? std::max<std::size_t>(column.width, 1) : 8;
    std::vector<char> buffer(n * width, 0);
    for (std::size_t i = 0; i < n; ++i) {
        const Value& v = values[i * stride];
        char* at = buffer.data() + i * width;
        switch (column.type) {
            case ColumnType::f64: {
                const double d = std::get<double>(v);
                std::memcpy(at, &d, 8);
                break;
            }
            case ColumnType::i64: {
                const std::int64_t x = std::get<std::int64_t>(v);
                std::memcpy(at, &x, 8);
                break;
            }
            case ColumnType::u64: {
                const std::uint64_t x = std::get<std::uint64_t>(v);
                std::memcpy(at, &x, 8);
                break;
            }
            case ColumnType::str: {
                const auto& s = std::get<std::string>(v);
                if (s.size() > width) {
                    throw std::logic_error("string of " + std::to_string(s.size()) +
                                           " bytes for column " + column.name + " of width " +
                                           std::to_string(width));
                }
                std::memcpy(at, s.data(), s.size());
                break;
            }
        }
    }
    return buffer;
}
}  // namespace

void create_groups(hid_t file, const std::string& path) {
    const Handle gcpl = untimed_gcpl();
    std::size_t at = 0;
    while (at != std::string::npos) {
        at = path.find('/', at + 1);
        const std::string prefix = path.substr(0, at);
        if (prefix.empty()) continue;
        const htri_t exists = H5Lexists(file, prefix.c_str(), H5P_DEFAULT);
        check(exists, "look up group /" + prefix);
        if (!exists) {
            Handle g(check(H5Gcreate2(file, prefix.c_str(), H5P_DEFAULT, gcpl.get(), H5P_DEFAULT),
                           "create group /" + prefix),
                     H5Gclose);
        }
    }
}

Handle create_column(hid_t file, const std::string& path, const ColumnSpec& column,
                     std::size_t rows) {
    const auto slash = path.rfind('/');
    if (slash != std::string::npos) create_groups(file, path.substr(0, slash));
    const hsize_t dims[1] = {rows};
    Handle space(check(H5Screate_simple(1, dims, nullptr), "create dataspace for /" + path),
                 H5Sclose);
    Handle dcpl(check(H5Pcreate(H5P_DATASET_CREATE), "create dataset property list"), H5Pclose);
    check_herr(H5Pset_obj_track_times(dcpl.get(), 0), "turn off dataset time stamps");
    check_herr(H5Pset_alloc_time(dcpl.get(), H5D_ALLOC_TIME_EARLY), "set early allocation");
    check_herr(H5Pset_fill_time(dcpl.get(), H5D_FILL_TIME_ALLOC), "set fill time");
    const Handle type = file_type(column);
    if (column.type != ColumnType::str) {
        const Value fill = fill_value(column.type);
        const auto packed = pack(column, &fill, 1, 1);
        check_herr(H5Pset_fill_value(dcpl.get(), memory_type(column.type), packed.data()),
                   "set fill value of /" + path);
    }
    return {check(H5Dcreate2(file, path.c_str(), type.get(), space.get(), H5P_DEFAULT, dcpl.get(),
                             H5P_DEFAULT),
                  "create dataset /" + path),
            H5Dclose};
}

namespace {
// Writes values[i * stride], i < n, to the n elements that `select` picks in the dataset's
// file space; `rows` names them in an error.
template <class Select>
void write_selected(hid_t dataset, const ColumnSpec& column, const Value* values, std::size_t n,
                    std::size_t stride, Select&& select, const std::string& rows) {
    const auto buffer = pack(column, values, n, stride);
    const hsize_t count[1] = {n};
    Handle file_space(check(H5Dget_space(dataset), "get dataspace of column " + column.name),
                      H5Sclose);
    check_herr(select(file_space.get()), "select rows of column " + column.name);
    Handle mem_space(check(H5Screate_simple(1, count, nullptr), "create memory dataspace"),
                     H5Sclose);
    Handle mem_type = column.type == ColumnType::str
                          ? file_type(column)
                          : Handle(check(H5Tcopy(memory_type(column.type)), "copy type"), H5Tclose);
    check_herr(H5Dwrite(dataset, mem_type.get(), mem_space.get(), file_space.get(), H5P_DEFAULT,
                        buffer.data()),
               "write rows " + rows + " of column " + column.name);
}
}  // namespace

void write_column_range(hid_t dataset, const ColumnSpec& column, std::size_t first,
                        const Value* values, std::size_t n, std::size_t stride) {
    if (n == 0) return;
    const hsize_t start[1] = {first}, count[1] = {n};
    write_selected(
        dataset, column, values, n, stride,
        [&](hid_t space) {
            return H5Sselect_hyperslab(space, H5S_SELECT_SET, start, nullptr, count, nullptr);
        },
        std::to_string(first) + ".." + std::to_string(first + n - 1));
}

void write_column_rows(hid_t dataset, const ColumnSpec& column, const std::vector<hsize_t>& rows,
                       const Value* values, std::size_t stride) {
    if (rows.empty()) return;
    if (rows.back() - rows.front() + 1 == rows.size()) {  // one run of rows
        write_column_range(dataset, column, rows.front(), values, rows.size(), stride);
        return;
    }
    write_selected(
        dataset, column, values, rows.size(), stride,
        [&](hid_t space) {
            return H5Sselect_elements(space, H5S_SELECT_SET, rows.size(), rows.data());
        },
        std::to_string(rows.front()) + ".." + std::to_string(rows.back()) + " (" +
            std::to_string(rows.size()) + " of them)");
}

namespace {
// The column spec a scalar dataset of `value` gets (strings: at least `str_width` bytes).
ColumnSpec scalar_spec(const Value& value, std::size_t str_width) {
    ColumnSpec spec{"scalar", ColumnType::f64, 0};
    if (std::holds_alternative<std::int64_t>(value)) spec.type = ColumnType::i64;
    if (std::holds_alternative<std::uint64_t>(value)) spec.type = ColumnType::u64;
    if (const auto* s = std::get_if<std::string>(&value)) {
        spec.type = ColumnType::str;
        spec.width = std::max<std::size_t>({str_width, s->size(), 1});
    }
    return spec;
}
}  // namespace

Handle create_scalar(hid_t file, const std::string& path, const Value& value,
                     std::size_t str_width) {
    const auto slash = path.rfind('/');
    if (slash != std::string::npos) create_groups(file, path.substr(0, slash));
    const ColumnSpec spec = scalar_spec(value, str_width);
    Handle space(check(H5Screate(H5S_SCALAR), "create scalar dataspace"), H5Sclose);
    Handle dcpl(check(H5Pcreate(H5P_DATASET_CREATE), "create dataset property list"), H5Pclose);
    check_herr(H5Pset_obj_track_times(dcpl.get(), 0), "turn off dataset time stamps");
    const Handle type = file_type(spec);
    return {check(H5Dcreate2(file, path.c_str(), type.get(), space.get(), H5P_DEFAULT, dcpl.get(),
                             H5P_DEFAULT),
                  "create dataset /" + path),
            H5Dclose};
}

void write_scalar(hid_t dataset, const Value& value, std::size_t str_width) {
    const ColumnSpec spec = scalar_spec(value, str_width);
    const auto buffer = pack(spec, &value, 1, 1);
    Handle mem_type = spec.type == ColumnType::str
                          ? file_type(spec)
                          : Handle(check(H5Tcopy(memory_type(spec.type)), "copy type"), H5Tclose);
    check_herr(H5Dwrite(dataset, mem_type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, buffer.data()),
               "write scalar dataset");
}

}  // namespace compatbench::h5
