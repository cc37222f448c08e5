// `compatbench status OUT`: a run's state from its folder, while it runs (from another
// shell or a login node), after it was interrupted or killed, or once it finished. Reads
// the ledger (the record of truth of finished tasks), status.json (the coordinator's last
// view: group sizes, running tasks, skips, ETA), the run lock and, when no run holds the
// folder, results.h5. Never writes.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "app/verbs.h"
#include "core/duration.h"
#include "exec/signals.h"
#include "store/folder_lock.h"
#include "store/h5_read.h"
#include "store/ledger.h"
#include "store/status_file.h"

namespace compatbench {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr std::size_t kShown = 5;  // slowest tasks and last errors listed

// What the ledger says, counted per group for records of one config hash.
struct LedgerFacts {
    std::map<std::string, std::size_t> done, failed;  // per group; failed: the last attempt
    std::set<std::string> done_ids;
    std::map<std::string, std::int64_t> last_attempt;  // per task id
    json slowest = json::array(), errors = json::array();
    std::string hash;
};

// A ledger that does not end in a newline was cut mid-write by a killed run: its last
// line number, or 0.
std::size_t torn_tail_line(const std::string& path, json& notes) {
    std::ifstream in(path, std::ios::binary);
    std::size_t lines = 0;
    char c = '\n';
    while (in.get(c))
        if (c == '\n') ++lines;
    if (c == '\n') return 0;
    notes.push_back(path +
                    ": the last line is cut off (the run was killed while writing it); it is "
                    "ignored, and --resume runs that task again");
    return lines + 1;
}

std::vector<nlohmann::json> ledger_records(const std::string& path, json& notes) {
    const std::size_t torn = torn_tail_line(path, notes);
    const std::string torn_at = path + ":" + std::to_string(torn) + ":";
    return Ledger::read(path, [&](const std::string& w) {
        if (torn == 0 || w.rfind(torn_at, 0) != 0) notes.push_back(w);
    });
}

LedgerFacts read_ledger(const std::string& path, std::string hash, json& notes) {
    LedgerFacts f;
    const auto records = ledger_records(path, notes);
    // As `run --resume` judges it: the hash most records carry (a tie: status.json's).
    std::map<std::string, std::size_t> count;
    for (const auto& r : records) ++count[record_field<std::string>(r, "config_hash", "")];
    count.erase("");
    for (const auto& [h, n] : count)
        if (!count.count(hash) || n > count[hash]) hash = h;
    f.hash = hash;
    std::map<std::string, std::pair<std::string, bool>> last;  // id -> (group, failed)
    std::vector<json> done;
    for (const auto& r : records) {
        if (record_field<std::string>(r, "config_hash", "") != hash) continue;
        const auto id = record_field<std::string>(r, "id", "");
        const auto group = record_field<std::string>(r, "group", "?");
        const bool ok = record_field<std::string>(r, "status", "") == "done";
        const auto rank = record_field<std::int64_t>(r, "rank", -1);
        const auto attempt = record_field<std::int64_t>(r, "attempt", 0);
        f.last_attempt[id] = std::max(f.last_attempt[id], attempt);
        if (ok) {
            f.done_ids.insert(id);
            done.push_back({{"id", id},
                            {"group", group},
                            {"rank", rank},
                            {"seconds", record_field<double>(r, "duration", 0.0)}});
        } else {
            f.errors.push_back({{"id", id},
                                {"attempt", attempt},
                                {"rank", rank},
                                {"error", record_field<std::string>(r, "error", "")}});
        }
        if (!f.done_ids.count(id) || ok) last[id] = {group, !ok};
    }
    for (const auto& [id, gf] : last) ++(gf.second ? f.failed : f.done)[gf.first];
    std::stable_sort(done.begin(), done.end(), [](const json& a, const json& b) {
        return a["seconds"].get<double>() > b["seconds"].get<double>();
    });
    for (std::size_t i = 0; i < std::min(kShown, done.size()); ++i) f.slowest.push_back(done[i]);
    if (f.errors.size() > kShown)
        f.errors.erase(f.errors.begin(),
                       f.errors.begin() + static_cast<long>(f.errors.size() - kShown));
    return f;
}

// The snapshot's running tasks that the ledger has not recorded since (by attempt).
std::vector<RunningTask> still_running(const StatusSnapshot& snap, const LedgerFacts& ledger) {
    std::vector<RunningTask> out;
    for (const auto& r : snap.running) {
        const auto it = ledger.last_attempt.find(r.id);
        if (it == ledger.last_attempt.end() || it->second < r.attempt) out.push_back(r);
    }
    return out;
}

// Per group, tasks by status.
using Counts = std::map<std::string, std::map<std::string, std::size_t>>;

// Per-group counts of a closed results.h5 (/tasks/group, /tasks/status); empty if unreadable.
Counts results_counts(const std::string& path, std::string& status, json& notes) {
    Counts counts;
    try {
        const h5::ResultsReader r(path);
        if (r.exists("/meta/status")) status = r.strings("/meta/status").at(0);
        if (!r.exists("/tasks/group") || !r.exists("/tasks/status")) return counts;
        const auto groups = r.strings("/tasks/group"), statuses = r.strings("/tasks/status");
        for (std::size_t i = 0; i < std::min(groups.size(), statuses.size()); ++i)
            ++counts[groups[i]][statuses[i]];
    } catch (const std::exception& e) {
        notes.push_back(std::string(e.what()) +
                        " (a run killed before closing it leaves it unreadable; "
                        "--resume rebuilds it from the ledger)");
    }
    return counts;
}

std::size_t count(const std::map<std::string, std::size_t>& m, const std::string& k) {
    const auto f = m.find(k);
    return f == m.end() ? 0 : f->second;
}

// Group names in the snapshot's order, then any the ledger or results.h5 adds.
std::vector<std::string> group_names(const StatusSnapshot& snap, const LedgerFacts& ledger,
                                     const Counts& closed) {
    std::vector<std::string> names;
    const auto add = [&](const std::string& g) {
        if (std::find(names.begin(), names.end(), g) == names.end()) names.push_back(g);
    };
    for (const auto& g : snap.groups) add(g.name);
    for (const auto& [g, n] : ledger.done) add(g);
    for (const auto& [g, n] : ledger.failed) add(g);
    for (const auto& [g, n] : closed) add(g);
    return names;
}

// The groups' table. Sizes and skips come from status.json; done from the ledger (newer);
// failed from status.json while the run lives (a failed attempt may be retried), else
// from the ledger's last attempts; everything from results.h5 once the run closed it.
json group_rows(const StatusSnapshot& snap, const LedgerFacts& ledger, bool live,
                const std::vector<RunningTask>& running, const Counts& closed) {
    json rows = json::array();
    for (const auto& name : group_names(snap, ledger, closed)) {
        const auto it = std::find_if(snap.groups.begin(), snap.groups.end(),
                                     [&](const GroupStatus& g) { return g.name == name; });
        const GroupStatus g = it != snap.groups.end() ? *it : GroupStatus{name, "?"};
        std::size_t done = count(ledger.done, name);
        std::size_t failed = live ? g.failed : count(ledger.failed, name), skipped = g.skipped;
        if (const auto c = closed.find(name); c != closed.end()) {
            done = count(c->second, "done");
            failed = count(c->second, "failed");
            skipped = count(c->second, "skipped");
        }
        std::size_t n_running = 0;
        for (const auto& r : running) n_running += r.group == name ? 1 : 0;
        if (!live) n_running = 0;
        const std::size_t tasks = std::max(g.tasks, done + failed + skipped + n_running);
        rows.push_back({{"group", name},
                        {"kind", g.kind},
                        {"tasks", tasks},
                        {"done", done},
                        {"failed", failed},
                        {"skipped", skipped},
                        {"running", n_running},
                        {"pending", tasks - done - failed - skipped - n_running},
                        {"expected_seconds", g.expected_seconds}});
    }
    return rows;
}

}  // namespace

namespace {

// Everything `status` knows of the run in `out`, as the JSON that --json prints.
json running_json(const std::vector<RunningTask>& tasks) {
    json running = json::array();
    for (const auto& r : tasks)
        running.push_back({{"id", r.id},
                           {"group", r.group},
                           {"rank", r.rank},
                           {"since", r.since},
                           {"host", r.host},
                           {"devices", r.devices}});
    return running;
}

// The state of a run no longer live, beyond what it wrote: killed while running, or in its
// final writes (status.json still "finishing": whatever results.h5 says), or complete
// without its results.h5. A run that a signal had asked to stop (`stop_signal`) and that
// ended before its clean end was killed by its launcher (mpirun passes SIGTERM on, then kills
// the ranks a second later): stopped by the signal all the same, with nothing finished lost.
void settle_state(std::string& state, bool live, bool finishing, int stop_signal, bool have_results,
                  json& notes) {
    if (live) return;
    const bool clean_end = state == "complete" || state == "failed" || state == "interrupted";
    if (stop_signal != 0 && (!clean_end || finishing)) {
        state = "interrupted";
        notes.push_back("signal " + std::to_string(stop_signal) +
                        " asked the run to stop, and its ranks were ended before their clean "
                        "end (mpirun kills them a second after passing SIGTERM or SIGINT on): "
                        "the ledger keeps every finished task; any tasks in flight were lost; "
                        "--resume runs them and rebuilds results.h5");
        return;
    }
    if (state == "running" || state == "stopping") state = "stopped";  // killed, not closed
    if (finishing) {
        state = "stopped";
        notes.push_back(
            "the run ended while writing results.h5: it may be incomplete; --resume rebuilds "
            "it from the ledger");
    }
    if (state == "complete" && !have_results) {
        state = "incomplete";
        notes.push_back("results.h5 is missing: --resume rebuilds it from the ledger");
    }
}

constexpr const char* kNoLedgerNote =
    "no ledger.jsonl: the run recorded no task (it stopped while starting, or is starting): "
    "nothing to resume; run it again";

json status_report(const std::string& out) {
    const fs::path dir(out);
    const std::string ledger_path = (dir / "ledger.jsonl").string();
    const std::string status_path = (dir / "status.json").string();
    if (fs::exists(dir) && !fs::is_directory(dir))
        throw std::runtime_error(out + ": a file, not a run folder (give the run's --out)");
    if (!fs::is_directory(dir)) throw std::runtime_error(out + ": no such folder");
    // A run that stopped before its ledger existed (its results file's creation failed)
    // leaves its lock: a run folder all the same, stopped without a clean end.
    if (!fs::exists(ledger_path) && !fs::exists(status_path) && !fs::exists(dir / ".lock"))
        throw std::runtime_error(out + ": not a compatbench run folder (no ledger.jsonl, no " +
                                 "status.json)");
    json notes = json::array();
    if (!fs::exists(ledger_path)) notes.push_back(kNoLedgerNote);
    StatusSnapshot snap;
    bool have_snap = false;
    if (fs::exists(status_path)) {
        try {
            snap = read_status_file(status_path);
            have_snap = true;
        } catch (const std::exception& e) {
            notes.push_back(e.what());
        }
    }
    if (!have_snap)
        notes.push_back(
            "no readable status.json: group sizes, running tasks and the ETA "
            "are unknown; counts come from the ledger alone");
    const bool live = folder_locked(out);
    const LedgerFacts ledger = read_ledger(ledger_path, snap.config_hash, notes);
    std::string state = live        ? (snap.state == "stopping" ? "stopping" : "running")
                        : have_snap ? snap.state
                                    : "unknown";
    Counts closed;
    if (!live && fs::exists(dir / "results.h5")) {
        std::string meta_status;
        closed = results_counts((dir / "results.h5").string(), meta_status, notes);
        if (!meta_status.empty()) state = meta_status;
    }
    settle_state(state, live, have_snap && snap.state == "finishing", snap.stop_signal,
                 fs::exists(dir / "results.h5"), notes);
    const double now = now_epoch();
    // The ETA and its range at `updated`, counted down to now while the run lives.
    const auto left = [&](double at_update) {
        if (!have_snap || at_update < 0.0 || state == "complete") return -1.0;
        return live ? std::max(0.0, at_update - (now - snap.updated)) : at_update;
    };
    const double eta = left(snap.eta_seconds);
    const double eta_low = left(snap.eta_low_seconds), eta_high = left(snap.eta_high_seconds);
    if (live && have_snap && now - snap.updated > 3 * snap.progress_interval + 30)
        notes.push_back("status.json was last written " +
                        std::to_string(std::lround(now - snap.updated)) +
                        " s ago although the run holds its lock: is it hung?");
    const std::vector<RunningTask> open_tasks = still_running(snap, ledger);
    const json running = running_json(open_tasks);
    return {{"folder", out},
            {"experiment", snap.experiment},
            {"config_path", snap.config_path},
            {"config_hash", ledger.hash},
            {"ranks", snap.ranks},
            {"hosts", snap.hosts},
            {"pid", snap.pid},
            {"state", state},
            {"live", live},
            {"started", snap.started},
            {"updated", snap.updated},
            {"now", now},
            {"eta_seconds", eta},
            {"eta_low_seconds", eta_low},
            {"eta_high_seconds", eta_high},
            {"eta_unmeasured_groups", snap.eta_unmeasured_groups},
            {"groups", group_rows(snap, ledger, live, open_tasks, closed)},
            {"running", live ? running : json::array()},
            {"interrupted_tasks", live ? json::array() : running},
            {"slowest", ledger.slowest},
            {"errors", ledger.errors},
            {"notes", notes}};
}

std::string clock_time(double epoch) {
    if (!std::isfinite(epoch) || epoch < 0 || epoch > 1e11) return "?";
    const auto t = static_cast<std::time_t>(epoch);
    std::tm tm{};
    char buf[32];
    if (!localtime_r(&t, &tm) || std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm) == 0)
        return "?";
    return buf;
}

// The report as text.
void print_status(const json& r) {
    const double now = r["now"];
    std::printf("%s: experiment '%s' (config %s, hash %s), %d rank(s) on %s\n",
                r["folder"].get<std::string>().c_str(), r["experiment"].get<std::string>().c_str(),
                r["config_path"].get<std::string>().c_str(),
                r["config_hash"].get<std::string>().c_str(), r["ranks"].get<int>(),
                r["hosts"].get<std::string>().c_str());
    const std::string state = r["state"];
    std::printf("state: %s%s", state.c_str(),
                r["live"].get<bool>() ? " (a run holds the folder)" : "");
    if (r["started"].get<double>() > 0)
        std::printf(", started %s, last update %s ago", clock_time(r["started"]).c_str(),
                    format_duration(now - r["updated"].get<double>()).c_str());
    std::printf("\n");
    if (state == "stopped" || state == "interrupted")
        std::printf("continue it with: compatbench run %s --out %s --resume\n",
                    r["config_path"].get<std::string>().c_str(),
                    r["folder"].get<std::string>().c_str());
    std::size_t sum[6] = {0, 0, 0, 0, 0, 0};
    const char* cols[6] = {"tasks", "done", "failed", "skipped", "running", "pending"};
    std::printf("\n%-24s %-16s", "group", "kind");
    for (const char* c : cols) std::printf(" %8s", c);
    std::printf(" %9s\n", "s/task");
    for (const auto& g : r["groups"]) {
        std::printf("%-24s %-16s", g["group"].get<std::string>().c_str(),
                    g["kind"].get<std::string>().c_str());
        for (int c = 0; c < 6; ++c) {
            sum[c] += g[cols[c]].get<std::size_t>();
            std::printf(" %8zu", g[cols[c]].get<std::size_t>());
        }
        std::printf(" %9.3g\n", g["expected_seconds"].get<double>());
    }
    std::printf("%-41s", "all");
    for (std::size_t v : sum) std::printf(" %8zu", v);
    const double eta = r["eta_seconds"];
    const bool resumable = state == "stopped" || state == "interrupted";
    if (eta >= 0 && (r["live"].get<bool>() || resumable)) {
        std::printf("\n\n%s %s", r["live"].get<bool>() ? "ETA" : "a resume would take about",
                    format_duration(eta).c_str());
        const std::size_t unmeasured = r["eta_unmeasured_groups"];
        const double low = r["eta_low_seconds"], high = r["eta_high_seconds"];
        if (low >= 0.0 && high > low)
            std::printf(" (between %s and %s", format_duration(low).c_str(),
                        format_duration(high).c_str());
        if (low >= 0.0 && high > low && unmeasured > 0)
            std::printf(": %zu group%s not measured yet", unmeasured, unmeasured == 1 ? "" : "s");
        if (low >= 0.0 && high > low) std::printf(")");
    }
    std::printf("\n");
    for (const char* key : {"running", "interrupted_tasks"}) {
        if (r[key].empty()) continue;
        std::printf("\n%s (%zu):\n",
                    std::string(key) == "running" ? "running" : "were running when the run stopped",
                    r[key].size());
        for (const auto& t : r[key]) {
            const std::string devices = t.value("devices", std::string());
            std::printf("  %-40s rank %d on %s%s since %s (%s)\n",
                        t["id"].get<std::string>().c_str(), t["rank"].get<int>(),
                        t.value("host", std::string("?")).c_str(),
                        devices.empty() ? "" : (", devices " + devices).c_str(),
                        clock_time(t["since"]).c_str(),
                        format_duration(now - t["since"].get<double>()).c_str());
        }
    }
    if (!r["slowest"].empty()) std::printf("\nslowest tasks:\n");
    for (const auto& t : r["slowest"])
        std::printf("  %-40s %9.3f s  rank %d\n", t["id"].get<std::string>().c_str(),
                    t["seconds"].get<double>(), t["rank"].get<int>());
    if (!r["errors"].empty()) std::printf("\nlast errors:\n");
    for (const auto& t : r["errors"]) {
        std::string e = t["error"];
        if (e.size() > 400) e = e.substr(0, 397) + "...";
        std::printf("  %s (attempt %d, rank %d): %s\n", t["id"].get<std::string>().c_str(),
                    t["attempt"].get<int>(), t["rank"].get<int>(), e.c_str());
    }
    for (const auto& n : r["notes"]) std::printf("\nnote: %s\n", n.get<std::string>().c_str());
}

}  // namespace

// The code `run` itself ended with, from the state it left: what a requeue script checks
// when a launcher (mpirun on SIGTERM or SIGINT) replaced the ranks' own exit code.
int run_exit_code(const std::string& state) {
    if (state == "complete") return kExitOk;
    if (state == "failed") return kExitTasksFailed;
    if (state == "interrupted") return kExitRequeue;
    if (state == "running" || state == "stopping") return kExitStillRunning;
    return kExitInternal;  // stopped with no clean end (killed, or an error on a rank)
}

int verb_status(const std::string& out, bool as_json, bool exit_code) {
    try {
        const json report = status_report(out);
        if (as_json) {
            std::cout << report.dump(1) << "\n";
        } else {
            print_status(report);
        }
        return exit_code ? run_exit_code(report["state"]) : kExitOk;
    } catch (const std::exception& e) {
        std::cerr << "compatbench status: " << e.what() << "\n";
        return kExitBadInput;
    }
}

}  // namespace compatbench
