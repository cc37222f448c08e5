#include "store/table_file.h"

#include <algorithm>

namespace compatbench {

TableFile::TableFile(const std::string& path) : path_(path) {
    h5::quiet_errors();
    file_ = h5::Handle(h5::check(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT),
                                 "create " + path),
                       H5Fclose);
}

void TableFile::add_group(const std::string& group) { h5::create_groups(file_.get(), group); }

void TableFile::write(const TableData& table) {
    add_group(table.path);
    for (std::size_t c = 0; c < table.columns.size(); ++c) {
        ColumnSpec spec = table.columns[c];
        const auto& cells = table.values[c];
        if (spec.type == ColumnType::str) {
            spec.width = 1;
            for (const auto& v : cells)
                if (const auto* s = std::get_if<std::string>(&v))
                    spec.width = std::max(spec.width, s->size());
        }
        const h5::Handle d =
            h5::create_column(file_.get(), table.path + "/" + spec.name, spec, cells.size());
        h5::write_column_range(d.get(), spec, 0, cells.data(), cells.size());
    }
}

}  // namespace compatbench
