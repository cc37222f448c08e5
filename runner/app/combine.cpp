// `compatbench combine DIR... --out DIR`: the spread across runs (one per experiment seed, as
// a job array writes them) of every statistic of every analysis table: for each table,
// row (named by its string columns) and numeric column, the number of runs with a value,
// mean, sample sd, min and max. Written to <out>/combined.h5 (/combine/spread,
// /combine/sources) and the headline rows printed: correlations, Kruskal-Wallis, the
// leave-one-family-out ranges and the budget-limited positions.
#include <cmath>
#include <filesystem>
#include <iostream>
#include <map>
#include <set>

#include "app/verbs.h"
#include "exec/signals.h"
#include "store/h5.h"
#include "store/h5_read.h"

namespace compatbench {

namespace {

namespace fs = std::filesystem;

struct Key {
    std::string table, row, column;
    bool operator<(const Key& o) const {
        return std::tie(table, row, column) < std::tie(o.table, o.row, o.column);
    }
};

// Headline columns printed at the end (all are written).
bool headline(const Key& k) {
    static const std::set<std::string> columns = {
        "pearson_r",   "spearman_rho",  "h",     "p",       "pearson_min",
        "pearson_max", "best_position", "auroc", "exponent"};
    return columns.count(k.column) > 0 &&
           (k.table.ends_with("/correlations") || k.table.ends_with("/kruskal") ||
            k.table.ends_with("/lofo_range") || k.table.ends_with("/budget_search") ||
            k.table.ends_with("/screening") || k.table.ends_with("/drift"));
}

}  // namespace

int verb_combine(const std::vector<std::string>& dirs, const std::string& out) {
    try {
        std::map<Key, std::vector<double>> values;
        std::vector<Key> order;
        std::vector<std::string> sources;
        std::vector<std::int64_t> seeds;
        for (const auto& d : dirs) {
            const std::string path =
                fs::is_directory(d) ? (fs::path(d) / "results.h5").string() : d;
            const h5::ResultsReader r(path);
            sources.push_back(path);
            seeds.push_back(r.exists("/meta/seed")
                                ? static_cast<std::int64_t>(r.numbers("/meta/seed").at(0))
                                : -1);
            for (const auto& table : r.tables("/")) {
                if (table.find("/analysis/") == std::string::npos) continue;
                const auto cols = r.columns(table);
                std::vector<std::string> text_cols, num_cols;
                for (const auto& c : cols) {
                    if (!r.is_string(table + "/" + c)) {
                        num_cols.push_back(c);
                    } else if (c != "reason") {  // why a value is NaN: not part of the row
                        text_cols.push_back(c);
                    }
                }
                std::vector<std::vector<std::string>> texts;
                for (const auto& c : text_cols) texts.push_back(r.strings(table + "/" + c));
                std::map<std::string, int> seen;  // rows with the same text: numbered
                std::size_t rows = 0;
                std::vector<std::vector<double>> nums;
                for (const auto& c : num_cols) {
                    nums.push_back(r.numbers(table + "/" + c));
                    rows = std::max(rows, nums.back().size());
                }
                for (const auto& t : texts) rows = std::max(rows, t.size());
                for (std::size_t i = 0; i < rows; ++i) {
                    std::string row;
                    for (std::size_t c = 0; c < text_cols.size(); ++c) {
                        if (!row.empty()) row += ", ";
                        row += text_cols[c] + "=" + (i < texts[c].size() ? texts[c][i] : "");
                    }
                    if (const int n = seen[row]++; n > 0) row += " #" + std::to_string(n + 1);
                    for (std::size_t c = 0; c < num_cols.size(); ++c) {
                        const Key k{table, row, num_cols[c]};
                        auto [it, added] = values.try_emplace(k);
                        if (added) order.push_back(k);
                        if (i < nums[c].size() && std::isfinite(nums[c][i]))
                            it->second.push_back(nums[c][i]);
                    }
                }
            }
        }
        if (order.empty()) throw std::runtime_error("no analysis tables in the runs given");
        // The spread table.
        std::vector<std::string> table_col, row_col, column_col;
        std::vector<double> mean, sd, lo, hi;
        std::vector<std::int64_t> runs;
        for (const auto& k : order) {
            const auto& v = values.at(k);
            double m = 0, s = 0, mn = NAN, mx = NAN;
            for (double x : v) m += x;
            m = v.empty() ? NAN : m / static_cast<double>(v.size());
            for (double x : v) {
                s += (x - m) * (x - m);
                mn = std::isnan(mn) ? x : std::min(mn, x);
                mx = std::isnan(mx) ? x : std::max(mx, x);
            }
            table_col.push_back(k.table);
            row_col.push_back(k.row);
            column_col.push_back(k.column);
            runs.push_back(static_cast<std::int64_t>(v.size()));
            mean.push_back(m);
            sd.push_back(v.size() > 1 ? std::sqrt(s / static_cast<double>(v.size() - 1)) : NAN);
            lo.push_back(mn);
            hi.push_back(mx);
        }
        fs::create_directories(out);
        const std::string file = (fs::path(out) / "combined.h5").string();
        h5::quiet_errors();
        h5::Handle f(h5::check(H5Fcreate(file.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT),
                               "create " + file),
                     H5Fclose);
        h5::create_groups(f.get(), "combine/spread");
        h5::create_groups(f.get(), "combine/sources");
        const auto write_strings = [&](const std::string& path, const std::vector<std::string>& v) {
            std::size_t w = 1;
            for (const auto& s : v) w = std::max(w, s.size());
            const ColumnSpec spec{path.substr(path.rfind('/') + 1), ColumnType::str, w};
            std::vector<Value> cells(v.begin(), v.end());
            auto d = h5::create_column(f.get(), path, spec, v.size());
            h5::write_column_range(d.get(), spec, 0, cells.data(), cells.size());
        };
        const auto write_numbers = [&](const std::string& path, const auto& v, ColumnType type) {
            const ColumnSpec spec{path.substr(path.rfind('/') + 1), type, 0};
            std::vector<Value> cells(v.begin(), v.end());
            auto d = h5::create_column(f.get(), path, spec, v.size());
            h5::write_column_range(d.get(), spec, 0, cells.data(), cells.size());
        };
        write_strings("combine/spread/table", table_col);
        write_strings("combine/spread/row", row_col);
        write_strings("combine/spread/column", column_col);
        write_numbers("combine/spread/runs", runs, ColumnType::i64);
        write_numbers("combine/spread/mean", mean, ColumnType::f64);
        write_numbers("combine/spread/sd", sd, ColumnType::f64);
        write_numbers("combine/spread/min", lo, ColumnType::f64);
        write_numbers("combine/spread/max", hi, ColumnType::f64);
        write_strings("combine/sources/path", sources);
        write_numbers("combine/sources/seed", seeds, ColumnType::i64);

        std::printf("%zu runs, %zu statistics -> %s (/combine/spread)\n\n", sources.size(),
                    order.size(), file.c_str());
        std::printf("%-40s  %-44s  %-14s  %4s  %10s  %10s  %10s  %10s\n", "table", "row", "column",
                    "runs", "mean", "sd", "min", "max");
        for (std::size_t i = 0; i < order.size(); ++i) {
            if (!headline(order[i])) continue;
            std::printf("%-40s  %-44.44s  %-14s  %4lld  %10.4g  %10.4g  %10.4g  %10.4g\n",
                        table_col[i].c_str(), row_col[i].c_str(), column_col[i].c_str(),
                        static_cast<long long>(runs[i]), mean[i], sd[i], lo[i], hi[i]);
        }
        return kExitOk;
    } catch (const std::exception& e) {
        std::cerr << "compatbench combine: " << e.what() << "\n";
        return kExitBadInput;
    }
}

}  // namespace compatbench
