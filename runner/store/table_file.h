// A serial HDF5 file of whole tables written once (the combine verb's, the advice files'):
// each table a group of 1-D column datasets, as in results.h5 (docs/results.md).
#pragma once

#include <string>

#include "core/table.h"
#include "store/h5.h"

namespace compatbench {

class TableFile {
  public:
    // Creates (truncates) `path`; std::runtime_error naming it when it cannot.
    explicit TableFile(const std::string& path);
    // The groups along `group` ("a/b"), even with no table in them.
    void add_group(const std::string& group);
    // `table` under its path (relative to the file's root): one dataset per column, a string
    // column as wide as its longest value (at least 1).
    void write(const TableData& table);

  private:
    std::string path_;
    h5::Handle file_;
};

}  // namespace compatbench
