// Thin RAII owners and checked calls over the HDF5 C API (parallel build). Every failed
// call throws std::runtime_error naming what was being done and on which object.
#pragma once

#include <hdf5.h>

#include <exception>
#include <string>
#include <utility>
#include <vector>

#include "core/value.h"

namespace compatbench::h5 {

// Marks `file` as opened with the MPI-IO driver by more than one rank, or no longer: closing
// it or its objects may be collective (H5Fclose, H5Dclose). Local.
void mark_shared(hid_t file, bool shared);
// True when `id` is a file marked shared or an object in one. Local.
bool in_shared_file(hid_t id);

// Owns one hid_t and closes it with the matching H5*close. While an exception unwinds, an
// object of a file shared by several ranks is let go unclosed: its close may be collective,
// the ranks that did not fail would wait in it for good, and the caller ends the job instead
// (MPI_Abort); HDF5 keeps the file as the last flush left it.
class Handle {
  public:
    using Closer = herr_t (*)(hid_t);
    Handle() = default;
    Handle(hid_t id, Closer closer) : id_(id), closer_(closer) {}
    ~Handle() { reset(); }
    Handle(Handle&& other) noexcept : id_(std::exchange(other.id_, -1)), closer_(other.closer_) {}
    Handle& operator=(Handle&& other) noexcept {
        if (this != &other) {
            reset();
            id_ = std::exchange(other.id_, -1);
            closer_ = other.closer_;
        }
        return *this;
    }
    Handle(const Handle&) = delete;
    Handle& operator=(const Handle&) = delete;

    hid_t get() const { return id_; }
    explicit operator bool() const { return id_ >= 0; }
    hid_t release() { return std::exchange(id_, -1); }
    void reset() {
        const bool abandon = std::uncaught_exceptions() > 0 && in_shared_file(id_);
        if (id_ >= 0 && closer_ && !abandon) closer_(id_);
        id_ = -1;
    }

  private:
    hid_t id_ = -1;
    Closer closer_ = nullptr;
};

// Throws "HDF5: <what> failed" when `status` < 0; returns `status`.
hid_t check(hid_t status, const std::string& what);
void check_herr(herr_t status, const std::string& what);

// Turns off HDF5's own error printing (our exceptions say what failed). Local.
void quiet_errors();

Handle file_type(const ColumnSpec& column);  // the file datatype of a column
hid_t memory_type(ColumnType type);          // native type (not for str)

// Creates every missing group along `path` ("a/b/c"), without time stamps.
// collective: all ranks, or it hangs (parallel files).
void create_groups(hid_t file, const std::string& path);

// Creates a 1-D dataset of `rows` elements with the column's fill value, allocated now.
// collective: all ranks, or it hangs (parallel files).
Handle create_column(hid_t file, const std::string& path, const ColumnSpec& column,
                     std::size_t rows);

// Writes values[0..n) to elements [first, first + n) of a 1-D dataset. Local (independent).
void write_column_range(hid_t dataset, const ColumnSpec& column, std::size_t first,
                        const Value* values, std::size_t n, std::size_t stride = 1);

// Writes values[i * stride] to element rows[i] of a 1-D dataset, for every i, in one write
// (rows ascending). Local (independent).
void write_column_rows(hid_t dataset, const ColumnSpec& column, const std::vector<hsize_t>& rows,
                       const Value* values, std::size_t stride);

// A scalar dataset holding `value` (str columns use the value's own length).
// collective: all ranks, or it hangs; every rank passes the same value.
Handle create_scalar(hid_t file, const std::string& path, const Value& value,
                     std::size_t str_width = 0);
// Writes a scalar dataset made by create_scalar. Local (independent).
void write_scalar(hid_t dataset, const Value& value, std::size_t str_width = 0);

}  // namespace compatbench::h5
