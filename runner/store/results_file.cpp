#include "store/results_file.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <stdexcept>

namespace compatbench {

namespace {
constexpr std::size_t kStatusWidth = 16;

std::size_t max_width(const std::vector<Value>& values) {
    std::size_t w = 1;
    for (const auto& v : values) {
        if (const auto* s = std::get_if<std::string>(&v)) w = std::max(w, s->size());
    }
    return w;
}
}  // namespace

ResultsFile::ResultsFile(const std::string& path, const comm::Comm& comm,
                         const ResultsSchema& schema, const RunMeta& meta)
    : rank_(comm.rank()) {
    h5::quiet_errors();
    h5::Handle fapl(h5::check(H5Pcreate(H5P_FILE_ACCESS), "create file access list"), H5Pclose);
    h5::check_herr(H5Pset_fapl_mpio(fapl.get(), comm.native(), MPI_INFO_NULL),
                   "select the MPI-IO driver");
    file_ = h5::Handle(h5::check(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get()),
                                 "create " + path),
                       H5Fclose);
    const hid_t f = file_.get();
    h5::mark_shared(f, comm.size() > 1);

    // /meta: every rank creates the same datasets (collective); rank 0 writes the values.
    const std::pair<const char*, Value> facts[] = {
        {"meta/config_text", meta.config_text},
        {"meta/config_path", meta.config_path},
        {"meta/config_hash", meta.config_hash},
        {"meta/git_revision", meta.git_revision},
        {"meta/version", meta.version},
        {"meta/experiment", meta.experiment},
        {"meta/seed", meta.seed},
        {"meta/ranks", meta.ranks},
        {"meta/hosts", meta.hosts},
        {"meta/placement", meta.placement},
        {"meta/start_time", meta.start_time},
    };
    for (const auto& [name, value] : facts) {
        const h5::Handle d = h5::create_scalar(f, name, value);
        if (rank_ == 0) h5::write_scalar(d.get(), value);
    }
    if (!meta.excluded.empty()) {
        const h5::Handle d = h5::create_scalar(f, "meta/excluded", Value{meta.excluded});
        if (rank_ == 0) h5::write_scalar(d.get(), Value{meta.excluded});
    }
    // Set again when the run ends.
    end_time_ = h5::create_scalar(f, "meta/end_time", std::nan(""));
    status_ = h5::create_scalar(f, "meta/status", std::string("running"), kStatusWidth);
    resumed_ = h5::create_scalar(f, "meta/resumed_tasks", std::int64_t{0});
    if (rank_ == 0) {
        h5::write_scalar(end_time_.get(), std::nan(""));
        h5::write_scalar(status_.get(), std::string("running"), kStatusWidth);
        h5::write_scalar(resumed_.get(), std::int64_t{0});
    }

    // /tasks
    task_columns_ = {{"id", ColumnType::str, schema.id_width},
                     {"kind", ColumnType::str, schema.kind_width},
                     {"group", ColumnType::str, schema.group_width},
                     {"status", ColumnType::str, kStatusWidth},
                     {"rank", ColumnType::i64, 0},
                     {"attempt", ColumnType::i64, 0},
                     {"start", ColumnType::f64, 0},
                     {"duration", ColumnType::f64, 0},
                     {"error", ColumnType::str, kErrorWidth},
                     {"host", ColumnType::str, kPlaceWidth},
                     {"devices", ColumnType::str, kPlaceWidth}};
    for (const auto& c : task_columns_) {
        task_datasets_.push_back(h5::create_column(f, "tasks/" + c.name, c, schema.tasks));
    }

    // The task tables.
    for (const auto& layout : schema.tables) {
        Table table;
        table.columns = layout.columns;
        for (const auto& c : layout.columns) {
            table.datasets.push_back(
                h5::create_column(f, layout.path + "/" + c.name, c, layout.rows));
        }
        tables_.push_back(std::move(table));
    }
}

ResultsFile::~ResultsFile() = default;

void ResultsFile::stage(std::size_t table, std::size_t row, Row values) {
    Table& t = tables_.at(table);
    if (values.size() != t.columns.size())
        throw std::logic_error("results file: a row of " + std::to_string(values.size()) +
                               " values for the " + std::to_string(t.columns.size()) +
                               " columns of table " + std::to_string(table));
    t.pending[row] = std::move(values);
    ++staged_;
}

void ResultsFile::flush() {
    for (auto& table : tables_) {
        if (table.pending.empty()) continue;
        // One write per column, of every pending row (rows ascending: the map's order).
        const std::size_t ncol = table.columns.size();
        std::vector<hsize_t> rows;
        std::vector<Value> flat;
        rows.reserve(table.pending.size());
        flat.reserve(table.pending.size() * ncol);
        for (auto& [row, values] : table.pending) {
            rows.push_back(row);
            std::move(values.begin(), values.end(), std::back_inserter(flat));
        }
        for (std::size_t c = 0; c < ncol; ++c)
            h5::write_column_rows(table.datasets[c].get(), table.columns[c], rows, flat.data() + c,
                                  ncol);
        table.pending.clear();
    }
    staged_ = 0;
}

// /tasks is written in slices, so that a run of millions of tasks needs no second copy.
void ResultsFile::write_task_facts(const std::vector<TaskFact>& facts, const TaskNamer& names) {
    constexpr std::size_t kSlice = 65536;
    const auto cut = [](const std::string& s, std::size_t width) {
        return s.size() > width ? s.substr(0, width - 3) + "..." : s;
    };
    std::vector<std::vector<Value>> columns(task_columns_.size());
    for (std::size_t first = 0; first < facts.size(); first += kSlice) {
        const std::size_t end = std::min(facts.size(), first + kSlice);
        for (auto& c : columns) c.clear();
        for (std::size_t i = first; i < end; ++i) {
            const TaskFact& f = facts[i];
            const TaskNames n = names(i);
            columns[0].emplace_back(std::in_place_type<std::string>, n.id);
            columns[1].emplace_back(std::in_place_type<std::string>, n.kind);
            columns[2].emplace_back(std::in_place_type<std::string>, n.group);
            columns[3].emplace_back(std::in_place_type<std::string>, f.status);
            columns[4].emplace_back(std::in_place_type<std::int64_t>, f.rank);
            columns[5].emplace_back(std::in_place_type<std::int64_t>, f.attempt);
            columns[6].emplace_back(std::in_place_type<double>, f.start);
            columns[7].emplace_back(std::in_place_type<double>, f.duration);
            columns[8].emplace_back(std::in_place_type<std::string>, cut(f.error, kErrorWidth));
            columns[9].emplace_back(std::in_place_type<std::string>, cut(f.host, kPlaceWidth));
            columns[10].emplace_back(std::in_place_type<std::string>,
                                     cut(f.devices, kPlaceWidth));
        }
        for (std::size_t c = 0; c < task_columns_.size(); ++c)
            h5::write_column_range(task_datasets_[c].get(), task_columns_[c], first,
                                   columns[c].data(), columns[c].size());
    }
}

void ResultsFile::write_analysis_tables(
    const std::vector<std::pair<std::string, TableData>>& tables, int writer) {
    for (const auto& [study, table] : tables) {
        const std::string base = analysis_table_path(study, table.path).substr(1);
        for (std::size_t c = 0; c < table.columns.size(); ++c) {
            ColumnSpec spec = table.columns[c];
            if (spec.type == ColumnType::str) spec.width = max_width(table.values[c]);
            h5::Handle d =
                h5::create_column(file_.get(), base + "/" + spec.name, spec, table.rows());
            if (rank_ == writer) {
                h5::write_column_range(d.get(), spec, 0, table.values[c].data(),
                                       table.values[c].size());
            }
        }
    }
}

void ResultsFile::finish(double end_time, const std::string& status, std::int64_t resumed_tasks) {
    h5::write_scalar(end_time_.get(), end_time);
    h5::write_scalar(resumed_.get(), resumed_tasks);
    h5::write_scalar(status_.get(), status, kStatusWidth);
}

void ResultsFile::close() {
    for (auto& t : tables_) t.datasets.clear();
    task_datasets_.clear();
    end_time_.reset();
    status_.reset();
    resumed_.reset();
    if (file_) {
        // Metadata reaches the disk here, in a call that returns its error, and not inside
        // H5Fclose: there a write failing on one rank (quota) leaves the others in a barrier.
        h5::check_herr(H5Fflush(file_.get(), H5F_SCOPE_GLOBAL), "flush results file");
        h5::mark_shared(file_.get(), false);
        h5::check_herr(H5Fclose(file_.release()), "close results file");
    }
}

}  // namespace compatbench
