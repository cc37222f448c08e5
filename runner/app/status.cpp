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

double now_epoch() {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

// What the ledger says, counted per group for records of one config hash.
struct LedgerFacts {
    std::map<std::string, std::size_t> done, failed;  // per group
    std::set<std::string> done_ids;
    json slowest = json::array(), errors = json::array();
    std::string hash;
};

// A ledger that does not end in a newline was cut mid-write by a killed run.
void note_torn_tail(const std::string& path, json& notes) {
    std::ifstream in(path, std::ios::binary | std::ios::ate);
    if (!in || in.tellg() <= 0) return;
    in.seekg(-1, std::ios::end);
    if (in.get() != '\n')
        notes.push_back(path +
                        ": the last line is cut off (the run was killed while writing it); "
                        "it is ignored, and --resume runs that task again");
}

LedgerFacts read_ledger(const std::string& path, std::string hash, json& notes) {
    LedgerFacts f;
    note_torn_tail(path, notes);
    const auto records = Ledger::read(path, [&](const std::string& w) {
        if (w.find("not JSON") == std::string::npos || notes.empty()) notes.push_back(w);
    });
    if (hash.empty() && !records.empty()) hash = records.back().value("config_hash", "");
    f.hash = hash;
    std::map<std::string, std::pair<std::string, bool>> last;  // id -> (group, failed)
    std::vector<json> done;
    for (const auto& r : records) {
        if (r.value("config_hash", "") != hash) continue;
        const std::string id = r.value("id", ""), group = r.value("group", "?");
        const bool ok = r.value("status", "") == "done";
        if (ok) {
            f.done_ids.insert(id);
            done.push_back({{"id", id},
                            {"group", group},
                            {"rank", r.value("rank", -1)},
                            {"seconds", r.value("duration", 0.0)}});
        } else {
            f.errors.push_back({{"id", id},
                                {"attempt", r.value("attempt", 0)},
                                {"rank", r.value("rank", -1)},
                                {"error", r.value("error", "")}});
        }
        if (!f.done_ids.count(id) || ok) last[id] = {group, !ok};
    }
    for (const auto& [id, gf] : last) ++(gf.second ? f.failed : f.done)[gf.first];
    std::sort(done.begin(), done.end(), [](const json& a, const json& b) {
        return a["seconds"].get<double>() > b["seconds"].get<double>();
    });
    for (std::size_t i = 0; i < std::min(kShown, done.size()); ++i) f.slowest.push_back(done[i]);
    if (f.errors.size() > kShown)
        f.errors.erase(f.errors.begin(),
                       f.errors.begin() + static_cast<long>(f.errors.size() - kShown));
    return f;
}

// Per-group counts of a closed results.h5 (/tasks/group, /tasks/status); empty if unreadable.
std::map<std::string, std::map<std::string, std::size_t>> results_counts(const std::string& path,
                                                                         std::string& status,
                                                                         json& notes) {
    std::map<std::string, std::map<std::string, std::size_t>> counts;
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

// The groups' table: sizes, skips and running tasks from status.json; done and failed
// from the ledger (newer than status.json), or from results.h5 once the run is closed.
json group_rows(const StatusSnapshot& snap, const LedgerFacts& ledger, bool live,
                const std::map<std::string, std::map<std::string, std::size_t>>& closed) {
    json rows = json::array();
    std::vector<std::string> names;
    for (const auto& g : snap.groups) names.push_back(g.name);
    for (const auto& [g, n] : ledger.done)
        if (std::find(names.begin(), names.end(), g) == names.end()) names.push_back(g);
    for (const auto& name : names) {
        const auto it = std::find_if(snap.groups.begin(), snap.groups.end(),
                                     [&](const GroupStatus& g) { return g.name == name; });
        const GroupStatus g = it != snap.groups.end() ? *it : GroupStatus{name, "?"};
        const auto count = [](const auto& m, const std::string& k) {
            const auto f = m.find(k);
            return f == m.end() ? std::size_t{0} : f->second;
        };
        std::size_t done = count(ledger.done, name), failed = count(ledger.failed, name);
        std::size_t skipped = g.skipped, running = 0;
        if (const auto c = closed.find(name); c != closed.end()) {
            done = count(c->second, "done");
            failed = count(c->second, "failed");
            skipped = count(c->second, "skipped");
        }
        if (live)
            for (const auto& r : snap.running)
                running += r.group == name && !ledger.done_ids.count(r.id) ? 1 : 0;
        const std::size_t finished = done + failed + skipped + running;
        rows.push_back({{"group", name},
                        {"kind", g.kind},
                        {"tasks", g.tasks},
                        {"done", done},
                        {"failed", failed},
                        {"skipped", skipped},
                        {"running", running},
                        {"pending", g.tasks > finished ? g.tasks - finished : 0},
                        {"expected_seconds", g.expected_seconds}});
    }
    return rows;
}

}  // namespace

namespace {

// Everything `status` knows of the run in `out`, as the JSON that --json prints.
json status_report(const std::string& out) {
    const fs::path dir(out);
    const std::string ledger_path = (dir / "ledger.jsonl").string();
    const std::string status_path = (dir / "status.json").string();
    if (!fs::is_directory(dir)) throw std::runtime_error(out + ": no such folder");
    if (!fs::exists(ledger_path) && !fs::exists(status_path))
        throw std::runtime_error(out + ": not a compatbench run folder (no ledger.jsonl, no " +
                                 "status.json)");
    json notes = json::array();
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
    std::string state = live ? "running" : have_snap ? snap.state : "unknown";
    std::map<std::string, std::map<std::string, std::size_t>> closed;
    if (!live && fs::exists(dir / "results.h5")) {
        std::string meta_status;
        closed = results_counts((dir / "results.h5").string(), meta_status, notes);
        if (!meta_status.empty()) state = meta_status;
    }
    if (!live && state == "running") state = "stopped";  // killed: status.json never closed
    const double now = now_epoch();
    double eta = -1.0;
    if (have_snap && snap.eta_seconds >= 0.0 && state != "complete")
        eta = live ? std::max(0.0, snap.eta_seconds - (now - snap.updated)) : snap.eta_seconds;
    if (live && have_snap && now - snap.updated > 3 * snap.progress_interval + 30)
        notes.push_back("status.json was last written " +
                        std::to_string(std::lround(now - snap.updated)) +
                        " s ago although the run holds its lock: is it hung?");
    json running = json::array();
    for (const auto& r : snap.running)
        if (!ledger.done_ids.count(r.id))
            running.push_back(
                {{"id", r.id}, {"group", r.group}, {"rank", r.rank}, {"since", r.since}});
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
            {"groups", group_rows(snap, ledger, live, closed)},
            {"running", live ? running : json::array()},
            {"interrupted_tasks", live ? json::array() : running},
            {"slowest", ledger.slowest},
            {"errors", ledger.errors},
            {"notes", notes}};
}

std::string clock_time(double epoch) {
    const std::time_t t = static_cast<std::time_t>(epoch);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", std::localtime(&t));
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
    if (eta >= 0 && state != "complete")
        std::printf("\n\n%s %s", r["live"].get<bool>() ? "ETA" : "a resume would take about",
                    format_duration(eta).c_str());
    std::printf("\n");
    for (const char* key : {"running", "interrupted_tasks"}) {
        if (r[key].empty()) continue;
        std::printf("\n%s (%zu):\n",
                    std::string(key) == "running" ? "running" : "were running when the run stopped",
                    r[key].size());
        for (const auto& t : r[key])
            std::printf("  %-40s rank %d since %s (%s)\n", t["id"].get<std::string>().c_str(),
                        t["rank"].get<int>(), clock_time(t["since"]).c_str(),
                        format_duration(now - t["since"].get<double>()).c_str());
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

int verb_status(const std::string& out, bool as_json) {
    try {
        const json report = status_report(out);
        if (as_json) {
            std::cout << report.dump(1) << "\n";
        } else {
            print_status(report);
        }
        return kExitOk;
    } catch (const std::exception& e) {
        std::cerr << "compatbench status: " << e.what() << "\n";
        return kExitBadInput;
    }
}

}  // namespace compatbench
