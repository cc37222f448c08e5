#include "exec/run.h"

#include <fcntl.h>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>
#include <sys/file.h>
#include <unistd.h>
#include <cstdio>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <thread>

#include "core/duration.h"
#include "exec/executor.h"
#include "exec/messages.h"
#include "exec/placement.h"
#include "exec/signals.h"
#include "exec/stall_guard.h"
#include "exec/task_rows.h"
#include "exec/worker.h"
#include "formats/safetensors.h"
#include "store/folder_lock.h"
#include "store/ledger.h"
#include "store/results_file.h"
#include "store/status_file.h"

#include "git_revision.h"
#ifndef COMPATBENCH_VERSION
#define COMPATBENCH_VERSION "0"
#endif

namespace compatbench {

namespace fs = std::filesystem;

namespace {

// The experiment a folder holds, judged by the folder's own records: the hash most of the
// ledger's records carry (a tie goes to this config's), else status.json's when the ledger
// has none ("" for neither). One damaged line, or a damaged status.json, does not make the
// folder another experiment's: a record that disagrees is merely not reused.
std::string folder_experiment(const fs::path& out, std::size_t& others, const std::string& hash) {
    std::map<std::string, std::size_t> count;
    for (const auto& r : Ledger::read((out / "ledger.jsonl").string(), [](const std::string&) {}))
        if (r.contains("config_hash") && r["config_hash"].is_string())
            ++count[r["config_hash"].get<std::string>()];
    std::string folder;
    for (const auto& [h, n] : count)
        if (folder.empty() || n > count[folder] || (n == count[folder] && h == hash)) folder = h;
    if (folder.empty()) {
        try {
            folder = read_status_file((out / "status.json").string()).config_hash;
        } catch (const std::exception&) {  // none, or damaged: nothing says otherwise
        }
    }
    others = 0;
    for (const auto& [h, n] : count)
        if (h != folder) others += n;
    return folder;
}

// Rank 0 checks and locks the output folder; "" when the run may go ahead. A folder belongs
// to one experiment: --resume continues the config hash that made it, never another.
std::string preflight(const RunOptions& options, const Config& config, FolderLock& lock) {
    const fs::path out(options.out);
    const fs::path ledger = out / "ledger.jsonl";
    const std::string& hash = config.hash;
    std::error_code ec;
    fs::create_directories(out / "logs", ec);
    if (ec) return out.string() + ": cannot create the output folder: " + ec.message();
    const double free_mb = static_cast<double>(fs::space(out, ec).available) / 1e6;
    if (!ec && free_mb < config.runner.min_free_mb) {
        char amounts[96];
        std::snprintf(amounts, sizeof amounts, "%.1f MB free, less than runner.min_free_mb (%g)",
                      free_mb, config.runner.min_free_mb);
        return out.string() + ": its file system has " + amounts +
               ": free some space or choose another --out (min_free_mb: 0 skips this check)";
    }
    if (std::string locked = lock.acquire(out.string(), 60.0); !locked.empty()) return locked;
    if (!options.resume && fs::exists(ledger) && fs::file_size(ledger, ec) > 0) {
        return ledger.string() +
               ": an earlier run's ledger is there; pass --resume to continue it, or choose "
               "another --out";
    }
    if (options.resume && fs::exists(ledger)) {
        std::size_t others = 0;
        const std::string folder = folder_experiment(out, others, hash);
        if (!folder.empty() && folder != hash)
            return out.string() + ": the folder holds another experiment (config hash " + folder +
                   "; this config's is " + hash +
                   "): --resume continues only the experiment that made it; give this one its "
                   "own --out (a change of runner: keys alone keeps the hash)";
        if (others > 0)
            std::cerr << "compatbench: warning: " << ledger.string() << ": " << others
                      << " record(s) carry another config hash (damaged lines?); their tasks "
                         "run again\n";
    }
    lock.claim();
    return {};
}

// What status.json says of the run itself (store/status_file.h).
StatusSnapshot status_header(const RunMeta& meta) {
    StatusSnapshot s;
    s.experiment = meta.experiment;
    s.config_path = meta.config_path;
    s.config_hash = meta.config_hash;
    s.hosts = meta.hosts;
    s.ranks = static_cast<int>(meta.ranks);
    s.pid = ::getpid();
    s.started = meta.start_time;
    return s;
}

nlohmann::json tables_to_json(const std::vector<std::pair<std::string, TableData>>& tables) {
    nlohmann::json j = nlohmann::json::array();
    for (const auto& [study, t] : tables) {
        nlohmann::json cols = nlohmann::json::array();
        for (std::size_t c = 0; c < t.columns.size(); ++c) {
            nlohmann::json values = nlohmann::json::array();
            for (const auto& v : t.values[c]) values.push_back(value_to_json(v));
            cols.push_back({{"name", t.columns[c].name},
                            {"type", static_cast<int>(t.columns[c].type)},
                            {"values", std::move(values)}});
        }
        j.push_back(
            {{"study", study}, {"path", t.path}, {"print", t.print}, {"columns", std::move(cols)}});
    }
    return j;
}

std::vector<std::pair<std::string, TableData>> tables_from_json(const nlohmann::json& j) {
    std::vector<std::pair<std::string, TableData>> tables;
    for (const auto& t : j) {
        TableData table;
        table.path = t.at("path").get<std::string>();
        table.print = t.value("print", true);
        for (const auto& c : t.at("columns")) {
            // No width limit here: write_analysis_tables sizes string columns from the data.
            const ColumnSpec spec{c.at("name").get<std::string>(),
                                  static_cast<ColumnType>(c.at("type").get<int>()),
                                  std::numeric_limits<std::size_t>::max()};
            table.add_column(spec);
            for (const auto& v : c.at("values"))
                table.values.back().push_back(value_from_json(v, spec));
        }
        tables.emplace_back(t.at("study").get<std::string>(), std::move(table));
    }
    return tables;
}

// Prints `t` under the heading `title` (the table's path in results.h5), `max_rows` rows at
// most, leaving out the task_id and seed columns.
void print_table(const std::string& title, const TableData& t, std::size_t max_rows) {
    std::ostringstream out;
    out << title << " (" << t.rows() << " rows)\n";
    std::vector<std::size_t> shown;
    for (std::size_t c = 0; c < t.columns.size(); ++c) {
        if (t.columns[c].name != "task_id" && t.columns[c].name != "seed") shown.push_back(c);
    }
    const std::size_t rows = std::min<std::size_t>(t.rows(), max_rows);
    std::vector<std::vector<std::string>> cells(t.columns.size());
    std::vector<std::size_t> width(t.columns.size());
    for (std::size_t c : shown) {
        width[c] = t.columns[c].name.size();
        for (std::size_t r = 0; r < rows; ++r) {
            std::string s;
            if (const auto* d = std::get_if<double>(&t.values[c][r])) {
                char buf[32];
                std::snprintf(buf, sizeof buf, "%.4g", *d);
                s = buf;
            } else {
                s = value_to_string(t.values[c][r]);
            }
            if (s.size() > 40) s = s.substr(0, 37) + "...";
            width[c] = std::max(width[c], s.size());
            cells[c].push_back(s);
        }
    }
    for (std::size_t c : shown)
        out << "  " << std::string(width[c] - t.columns[c].name.size(), ' ') << t.columns[c].name;
    out << "\n";
    for (std::size_t r = 0; r < rows; ++r) {
        for (std::size_t c : shown)
            out << "  " << std::string(width[c] - cells[c][r].size(), ' ') << cells[c][r];
        out << "\n";
    }
    if (rows < t.rows()) out << "  ... " << t.rows() - rows << " more rows in results.h5\n";
    std::cout << out.str() << std::flush;
}

// The coordinator's last words: the printed tables and what the run did.
void print_summary(const CoordinatorReport& report,
                   const std::vector<std::pair<std::string, TableData>>& tables,
                   const RunOptions& options, double wall_seconds) {
    if (options.print_tables) {
        for (const auto& t : report.printed) print_table("/" + t.path, t, 1000);
        for (const auto& [study, t] : tables)
            if (t.print) print_table(analysis_table_path(study, t.path), t, 30);
    }
    spdlog::info(
        "{}: {} done, {} failed, {} skipped, {} not run; {} ran in this run, {:.2f} s wall; "
        "results in {}",
        report.interrupted ? "interrupted" : "finished", report.done, report.failed, report.skipped,
        report.pending, report.ran, wall_seconds, (fs::path(options.out) / "results.h5").string());
    if (report.interrupted) {
        spdlog::warn("stopped by signal {}: exit code {}; continue with --resume", report.signal,
                     kExitRequeue);
    }
}

}  // namespace

void setup_logging(const std::string& out, int rank, const std::string& level, bool console) {
    std::vector<spdlog::sink_ptr> sinks;
    if (!out.empty()) {
        sinks.push_back(std::make_shared<spdlog::sinks::basic_file_sink_mt>(
            (fs::path(out) / "logs" / ("rank-" + std::to_string(rank) + ".log")).string()));
    }
    if (console) sinks.push_back(std::make_shared<spdlog::sinks::stdout_sink_mt>());
    auto logger = std::make_shared<spdlog::logger>("compatbench", sinks.begin(), sinks.end());
    logger->set_pattern("[%Y-%m-%d %H:%M:%S.%e] [r" + std::to_string(rank) + "] [%l] %v");
    logger->set_level(spdlog::level::from_str(level));
    logger->flush_on(spdlog::level::warn);
    spdlog::set_default_logger(logger);
    spdlog::flush_every(std::chrono::seconds(2));
}

namespace {

// What /meta records of this run; `ranks` as placement found them (exec/placement.h).
RunMeta run_meta(const Config& config, const std::vector<RankResources>& ranks) {
    RunMeta meta;
    meta.config_text = config.text;
    meta.config_path = config.path;
    meta.config_hash = config.hash;
    meta.git_revision = COMPATBENCH_GIT_REVISION;
    meta.version = COMPATBENCH_VERSION;
    meta.experiment = config.name;
    meta.seed = config.seed;
    meta.ranks = static_cast<std::int64_t>(ranks.size());
    std::set<std::string> hosts;
    for (const auto& r : ranks) hosts.insert(r.host);
    for (const auto& h : hosts) {
        if (!meta.hosts.empty()) meta.hosts += ',';
        meta.hosts += h;
    }
    meta.placement = placement_json(ranks);
    meta.start_time = now_epoch();
    return meta;
}

// Rank 0: the coordinator, resumed from the ledger's records, runs the graph to its end.
struct Coordinated {
    CoordinatorReport report;
    int exit_code = kExitOk;
    std::size_t resumed = 0;
};
// `finish` writes results.h5 (collectively) once the graph has run; only after it returns
// does status.json get the run's final state.
Coordinated coordinate(const Config& config, const TaskGraph& graph, const RunOptions& options,
                       const comm::Comm& comm, ResultsFile& results, Executor& executor,
                       const RunMeta& meta, const std::vector<RankResources>& ranks,
                       const std::function<void(const Coordinated&)>& finish) {
    const fs::path out(options.out);
    auto warn = [](const std::string& w) { spdlog::warn("{}", w); };
    std::vector<nlohmann::json> records;
    if (options.resume) records = Ledger::read((out / "ledger.jsonl").string(), warn);
    Ledger ledger((out / "ledger.jsonl").string(), config.runner.fsync_interval, warn);
    Coordinator coordinator(config, graph, comm, ledger, results, executor, ranks);
    Coordinated c;
    c.resumed = coordinator.resume_from(records);
    coordinator.publish_status((out / "status.json").string(), status_header(meta));
    if (options.resume)
        spdlog::info(
            "resume: {} of {} tasks done in earlier runs; results.h5 rebuilt from the "
            "ledger",
            c.resumed, graph.tasks().size());
    results.flush();
    c.report = coordinator.run();
    c.exit_code = c.report.interrupted                                          ? kExitRequeue
                  : (c.report.failed + c.report.skipped + c.report.pending) > 0 ? kExitTasksFailed
                                                                                : kExitOk;
    finish(c);
    coordinator.finish_status(c.report.status());
    return c;
}

// Before the collective writes that finish results.h5: on a disk too full for them, one
// rank's failed write can leave the others waiting inside MPI-IO for good (seen with Open
// MPI's ompio on a full tmpfs). A rank that finds too little room throws here instead, and
// its abort_job ends the job. The estimate is generous: 1 MB of metadata, 1 KB a row.
void require_room_to_finish(const ResultsFile& results, const Coordinated& c,
                            const std::string& path) {
    const std::uint64_t rows = results.staged() + c.report.facts.size();
    formats::require_free_space(path, (std::uint64_t{1} << 20) + 1024 * rows);
}

// Collectively: every rank's rows, the analyses (sent from rank 0), /tasks and /meta.
std::vector<std::pair<std::string, TableData>> finish_results(
    ResultsFile& results, const Config& config, const TaskGraph& graph, const Coordinated& c,
    const comm::Comm& comm, int rank, const std::string& path) {
    require_room_to_finish(results, c, path);
    if (rank == 0)
        for (std::size_t i = 0; i < c.report.facts.size(); ++i)
            if (c.report.facts[i].status != "done") stage_unfinished_row(results, config, graph, i);
    results.flush();
    std::string analyses =
        rank == 0 ? nlohmann::json(tables_to_json(c.report.analyses)).dump() : std::string();
    comm.broadcast(analyses);
    auto tables = tables_from_json(nlohmann::json::parse(analyses));
    results.write_analysis_tables(tables, 0);
    if (rank == 0) {
        results.write_task_facts(c.report.facts, task_names(config, graph));
        results.finish(now_epoch(), c.report.status(), static_cast<std::int64_t>(c.resumed));
    }
    results.close();
    return tables;
}

}  // namespace

RunSummary run_experiment(const Config& config, const TaskGraph& graph, const RunOptions& options,
                          const comm::Comm& comm) {
    RunSummary summary;
    const auto wall0 = std::chrono::steady_clock::now();
    const int rank = comm.rank(), size = comm.size();

    std::string problem;
    std::vector<RankResources> ranks;
    try {
        ranks = discover_placement(config.runner, options.devices, comm);
        problem = placement_problem(config, graph, ranks);
    } catch (const std::invalid_argument& e) {
        problem = e.what();  // the same on every rank
    }
    FolderLock lock;
    if (rank == 0 && problem.empty()) problem = preflight(options, config, lock);
    comm.broadcast(problem);
    if (!problem.empty()) {
        if (rank == 0) std::cerr << "compatbench: " << problem << "\n";
        summary.exit_code = kExitBadInput;
        return summary;
    }
    comm.barrier();
    setup_logging(options.out, rank, options.log_level, rank == 0);
    install_stop_signals();
    RunMeta meta = run_meta(config, ranks);
    for (const auto& p : graph.excluded()) meta.excluded += (meta.excluded.empty() ? "" : " ") + p;
    if (rank == 0)
        spdlog::info(
            "compatbench {} ({}): experiment '{}' (config {} hash {}), {} tasks on {} ranks, out "
            "{}",
            meta.version, meta.git_revision, config.name, config.path, config.hash,
            graph.tasks().size(), size, options.out);
    if (rank == 0) log_placement(ranks);

    // Outside the try: an error unwinds to abort_job without waiting for a task in flight.
    Executor executor(config, graph, rank, fs::path(options.out),
                      ranks[static_cast<std::size_t>(rank)]);
    Coordinated c;
    std::vector<std::pair<std::string, TableData>> tables;
    try {  // from the results file's creation on: it is collective, and so may fail on one rank
        const std::string path = (fs::path(options.out) / "results.h5").string();
        const auto results_file = [&] {
            const Watchdog guard =
                stall_guard(config.runner.stall_timeout, path, size, rank, "the creation");
            try {
                return std::make_unique<ResultsFile>(path, comm, results_schema(config, graph),
                                                     meta);
            } catch (const std::runtime_error& e) {
                throw std::runtime_error(path + ": " + e.what() +
                                         " while creating it (is its disk full, or a quota met?)");
            }
        }();
        ResultsFile& results = *results_file;
        const auto finish = [&](const Coordinated& done) {
            const Watchdog final_guard =
                stall_guard(config.runner.stall_timeout, path, size, rank, "the final writes");
            tables = finish_results(results, config, graph, done, comm, rank, path);
        };
        if (rank == 0) {
            c = coordinate(config, graph, options, comm, results, executor, meta, ranks, finish);
        } else {
            run_worker(config, graph, comm, results, executor);
            finish(c);
        }
        comm.broadcast(c.exit_code);
    } catch (const std::exception& e) {
        if (size == 1) throw RunStopped(e.what());  // alone: the results file is closed
        abort_job(comm, e.what());                  // exec/messages.h
    }

    summary.wall_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
    if (rank == 0) print_summary(c.report, tables, options, summary.wall_seconds);
    spdlog::default_logger()->flush();
    summary.exit_code = c.exit_code;
    summary.report = std::move(c.report);
    return summary;
}

}  // namespace compatbench
