#include "exec/analysis_runner.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "core/duration.h"

namespace compatbench {

AnalysisRunner::AnalysisRunner(const Config& config, const TaskGraph& graph)
    : config_(config), graph_(graph), done_(config.analyses.size(), false) {}

std::size_t AnalysisRunner::group_index(const std::string& name) const {
    std::size_t g = 0;
    while (config_.groups[g].name != name) ++g;
    return g;
}

AnalysisInput AnalysisRunner::input(const TaskBook& book, std::size_t g,
                                    std::vector<Row>& storage) const {
    const std::size_t first = storage.size();
    std::vector<double> seconds;
    for (std::size_t i = graph_.group_begin(g); i < graph_.group_end(g); ++i) {
        if (book.state(i) != TaskBook::State::done) continue;
        Row row = graph_.key_row(config_, i);
        row.insert(row.end(), book.outputs(i).begin(), book.outputs(i).end());
        storage.push_back(std::move(row));
        seconds.push_back(book.fact(i).duration);
    }
    AnalysisInput in{config_.groups[g], graph_.table_of_group(g).columns, {}, {}, {}};
    for (std::size_t r = first; r < storage.size(); ++r) in.rows.push_back(&storage[r]);
    in.seconds = std::move(seconds);
    return in;
}

void AnalysisRunner::run_ready(const TaskBook& book) {
    for (std::size_t a = 0; a < config_.analyses.size(); ++a) {
        if (done_[a]) continue;
        const Analysis& spec = config_.analyses[a];
        auto groups = spec.kind->extra_inputs(spec);
        groups.insert(groups.begin(), spec.input);
        if (!std::all_of(groups.begin(), groups.end(), [&](const std::string& name) {
                return book.group_finished(group_index(name));
            }))
            continue;
        done_[a] = true;
        groups.erase(groups.begin());
        run(book, spec, groups);
    }
}

void AnalysisRunner::run(const TaskBook& book, const Analysis& spec,
                         const std::vector<std::string>& extra) {
    // Every row is reserved up front, so that the row pointers stay valid.
    std::size_t total = 0;
    for (const auto& name : extra) {
        const std::size_t g = group_index(name);
        total += graph_.group_end(g) - graph_.group_begin(g);
    }
    const std::size_t g = group_index(spec.input);
    std::vector<Row> rows;
    rows.reserve(total + graph_.group_end(g) - graph_.group_begin(g));
    AnalysisInput in = input(book, g, rows);
    for (const auto& name : extra) in.others.push_back(input(book, group_index(name), rows));
    const auto t0 = std::chrono::steady_clock::now();
    try {
        auto tables = spec.kind->run(spec, in, [&](const std::string& note) {
            spdlog::warn("analysis {}: {} (NaN recorded)", spec.name, note);
        });
        for (auto& t : tables) tables_.emplace_back(spec.study, std::move(t));
        spdlog::info("analysis {} ({}) on {} rows of {} in {:.3f} s", spec.name, spec.kind->name(),
                     in.rows.size(), spec.input, seconds_since(t0));
    } catch (const std::exception& e) {
        spdlog::error("analysis {} failed: {}", spec.name, e.what());
    }
}

std::vector<TableData> printed_tables(const Config& config, const TaskGraph& graph,
                                      const TaskBook& book) {
    std::vector<TableData> out;
    for (std::size_t t = 0; t < graph.tables().size(); ++t) {
        TableData table;
        table.path = graph.tables()[t].path;
        for (const auto& c : graph.tables()[t].columns) table.add_column(c);
        bool any = false;
        for (std::size_t g = 0; g < config.groups.size(); ++g) {
            if (graph.group_table(g) != t || !config.groups[g].print) continue;
            any = true;
            for (std::size_t i = graph.group_begin(g); i < graph.group_end(g); ++i) {
                if (book.state(i) != TaskBook::State::done) continue;
                const Row keys = graph.key_row(config, i);
                for (std::size_t c = 0; c < keys.size(); ++c) table.values[c].push_back(keys[c]);
                const Row& outputs = book.outputs(i);
                for (std::size_t c = 0; c < outputs.size(); ++c)
                    table.values[keys.size() + c].push_back(outputs[c]);
            }
        }
        if (any) out.push_back(std::move(table));
    }
    return out;
}

}  // namespace compatbench
