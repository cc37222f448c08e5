// Reading tables back from a results file (serial HDF5): the columns of a table group as
// numbers or strings, the tables below a group, and any dataset's raw bytes. Used by
// `combine`, `compare` and `plan --costs`.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "store/h5.h"

namespace compatbench::h5 {

class ResultsReader {
  public:
    // Opens read-only; std::runtime_error naming the file when it is not an HDF5 file.
    explicit ResultsReader(const std::string& path);
    const std::string& path() const { return path_; }
    bool exists(const std::string& object) const;
    // Groups below `group` holding 1-D datasets (tables), as absolute paths, sorted.
    std::vector<std::string> tables(const std::string& group) const;
    // The dataset names of table group `table`, sorted.
    std::vector<std::string> columns(const std::string& table) const;
    bool is_string(const std::string& dataset) const;
    // A numeric 1-D dataset as doubles (integers converted; INT64_MIN -> NaN).
    std::vector<double> numbers(const std::string& dataset) const;
    // A fixed-length string 1-D dataset (null padding removed).
    std::vector<std::string> strings(const std::string& dataset) const;
    // Every dataset of the file, as paths without the leading '/', sorted.
    std::vector<std::string> datasets() const;
    // A dataset's type class, element size, shape and raw bytes as one string: two datasets
    // hold the same values exactly when these are equal.
    std::string raw(const std::string& dataset) const;

  private:
    std::string path_;
    Handle file_;
};

}  // namespace compatbench::h5
