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
#include "stats/summary.h"
#include "store/h5_read.h"
#include "store/table_file.h"

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

// Every run's statistics: per (table, row, column), the finite values, in first-seen order.
struct Collected {
    std::map<Key, std::vector<double>> values;
    std::vector<Key> order;
    std::vector<std::string> sources;
    std::vector<std::int64_t> seeds;
};

// A string column that says what became of a row (why a value is NaN, a verdict) rather
// than which row it is: runs that differ in it still speak of the same row.
bool outcome_column(const std::string& col) {
    return col == "reason" || col == "verdict" || col.ends_with("_reason");
}

// One analysis table of one run: a row is named by its string columns (numbered when
// several rows have the same names); each numeric cell joins its (table, row, column).
void collect_table(const h5::ResultsReader& r, const std::string& table, Collected& c) {
    std::vector<std::string> text_cols, num_cols;
    for (const auto& col : r.columns(table)) {
        if (!r.is_string(table + "/" + col))
            num_cols.push_back(col);
        else if (!outcome_column(col))
            text_cols.push_back(col);
    }
    std::vector<std::vector<std::string>> texts;
    for (const auto& col : text_cols) texts.push_back(r.strings(table + "/" + col));
    std::vector<std::vector<double>> nums;
    std::size_t rows = 0;
    for (const auto& col : num_cols) {
        nums.push_back(r.numbers(table + "/" + col));
        rows = std::max(rows, nums.back().size());
    }
    for (const auto& t : texts) rows = std::max(rows, t.size());
    std::map<std::string, int> seen;
    for (std::size_t i = 0; i < rows; ++i) {
        std::string row;
        for (std::size_t k = 0; k < text_cols.size(); ++k) {
            if (!row.empty()) row += ", ";
            row += text_cols[k] + "=" + (i < texts[k].size() ? texts[k][i] : "");
        }
        if (const int n = seen[row]++; n > 0) row += " #" + std::to_string(n + 1);
        for (std::size_t k = 0; k < num_cols.size(); ++k) {
            const Key key{table, row, num_cols[k]};
            auto [it, added] = c.values.try_emplace(key);
            if (added) c.order.push_back(key);
            if (i < nums[k].size() && std::isfinite(nums[k][i])) it->second.push_back(nums[k][i]);
        }
    }
}

Collected collect(const std::vector<std::string>& dirs) {
    Collected c;
    for (const auto& d : dirs) {
        const std::string path = fs::is_directory(d) ? (fs::path(d) / "results.h5").string() : d;
        const h5::ResultsReader r(path);
        c.sources.push_back(path);
        c.seeds.push_back(
            r.exists("/meta/seed") ? static_cast<std::int64_t>(r.numbers("/meta/seed").at(0)) : -1);
        for (const auto& table : r.tables("/"))
            if (table.find("/analysis/") != std::string::npos) collect_table(r, table, c);
    }
    if (c.order.empty()) throw std::runtime_error("no analysis tables in the runs given");
    return c;
}

// The spread table: one row per statistic.
struct Spread {
    std::vector<std::string> table, row, column;
    std::vector<double> mean, sd, min, max;
    std::vector<std::int64_t> runs;
};
Spread spread_of(const Collected& c) {
    Spread s;
    for (const auto& k : c.order) {
        const auto& v = c.values.at(k);
        s.table.push_back(k.table);
        s.row.push_back(k.row);
        s.column.push_back(k.column);
        s.runs.push_back(static_cast<std::int64_t>(v.size()));
        s.mean.push_back(stats::mean(v));
        s.sd.push_back(stats::sample_sd(v));
        s.min.push_back(stats::nan_min(v));
        s.max.push_back(stats::nan_max(v));
    }
    return s;
}

void write_combined(const std::string& file, const Spread& s, const Collected& c) {
    TableFile out(file);
    out.add_group("combine/spread");
    out.add_group("combine/sources");
    TableData spread = TableData::make("combine/spread", {}),
              sources = TableData::make("combine/sources", {});
    // A column of any cell type (a string column as wide as its longest string).
    const auto add = [](TableData& t, const char* name, const auto& v, ColumnType type) {
        t.add_column({name, type, 0});
        t.values.back().assign(v.begin(), v.end());
    };
    add(spread, "table", s.table, ColumnType::str);
    add(spread, "row", s.row, ColumnType::str);
    add(spread, "column", s.column, ColumnType::str);
    add(spread, "runs", s.runs, ColumnType::i64);
    add(spread, "mean", s.mean, ColumnType::f64);
    add(spread, "sd", s.sd, ColumnType::f64);
    add(spread, "min", s.min, ColumnType::f64);
    add(spread, "max", s.max, ColumnType::f64);
    add(sources, "path", c.sources, ColumnType::str);
    add(sources, "seed", c.seeds, ColumnType::i64);
    out.write(spread);
    out.write(sources);
}

void print_spread(const Spread& s, std::size_t runs, const std::string& file) {
    std::printf("%zu runs, %zu statistics -> %s (/combine/spread)\n\n", runs, s.table.size(),
                file.c_str());
    std::printf("%-40s  %-44s  %-14s  %4s  %10s  %10s  %10s  %10s\n", "table", "row", "column",
                "runs", "mean", "sd", "min", "max");
    for (std::size_t i = 0; i < s.table.size(); ++i) {
        if (!headline({s.table[i], s.row[i], s.column[i]})) continue;
        std::printf("%-40s  %-44.44s  %-14s  %4lld  %10.4g  %10.4g  %10.4g  %10.4g\n",
                    s.table[i].c_str(), s.row[i].c_str(), s.column[i].c_str(),
                    static_cast<long long>(s.runs[i]), s.mean[i], s.sd[i], s.min[i], s.max[i]);
    }
}

}  // namespace

int verb_combine(const std::vector<std::string>& dirs, const std::string& out) {
    try {
        const Collected c = collect(dirs);
        const Spread s = spread_of(c);
        fs::create_directories(out);
        const std::string file = (fs::path(out) / "combined.h5").string();
        write_combined(file, s, c);
        print_spread(s, c.sources.size(), file);
        return kExitOk;
    } catch (const std::exception& e) {
        std::cerr << "compatbench combine: " << e.what() << "\n";
        return kExitBadInput;
    }
}

}  // namespace compatbench
