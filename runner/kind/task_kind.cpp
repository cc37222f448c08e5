#include "kind/task_kind.h"

#include <chrono>
#include <exception>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "config/config.h"
#include "config/yaml_check.h"
#include "core/duration.h"
#include "formats/safetensors.h"

namespace compatbench {

namespace {
bool fits(const Value& value, const ColumnSpec& spec) {
    switch (spec.type) {
        case ColumnType::f64:
            return std::holds_alternative<double>(value);
        case ColumnType::i64:
            return std::holds_alternative<std::int64_t>(value);
        case ColumnType::u64:
            return std::holds_alternative<std::uint64_t>(value);
        case ColumnType::str:
            return std::holds_alternative<std::string>(value) &&
                   std::get<std::string>(value).size() <= spec.width;
    }
    return false;
}
}  // namespace

std::vector<std::string> TaskContext::devices() const {
    return resources ? task_devices(resources->devices, group.gpus) : std::vector<std::string>{};
}

std::vector<std::string> TaskContext::texts(const std::string& key) const {
    const auto it = lists.find(key);
    if (it == lists.end()) throw std::invalid_argument("task " + id + ": no list '" + key + "'");
    std::vector<std::string> out;
    for (const auto& s : it->second) out.push_back(s.text);
    return out;
}

std::vector<int> TaskContext::integers(const std::string& key) const {
    const auto it = lists.find(key);
    if (it == lists.end()) throw std::invalid_argument("task " + id + ": no list '" + key + "'");
    std::vector<int> out;
    for (const auto& s : it->second) {
        if (s.kind != Scalar::Kind::integer || s.integer < std::numeric_limits<int>::min() ||
            s.integer > std::numeric_limits<int>::max())
            throw std::invalid_argument("task " + id + ": list '" + key + "' holds '" + s.text +
                                        "', not an int");
        out.push_back(static_cast<int>(s.integer));
    }
    return out;
}

TaskOutcome TaskKind::run(const TaskContext& context) const {
    TaskOutcome outcome;
    outcome.start = now_epoch();
    const auto t0 = std::chrono::steady_clock::now();
    try {
        outcome.outputs = run_(context);
        const auto& columns = context.group.outputs;
        if (outcome.outputs.size() != columns.size()) {
            throw std::logic_error("task kind '" + std::string(name()) + "' returned " +
                                   std::to_string(outcome.outputs.size()) + " values for " +
                                   std::to_string(columns.size()) + " output columns");
        }
        for (std::size_t i = 0; i < columns.size(); ++i) {
            if (!fits(outcome.outputs[i], columns[i])) {
                throw std::logic_error("output '" + columns[i].name + "' does not fit its " +
                                       column_type_name(columns[i].type) + " column");
            }
        }
        outcome.status = TaskStatus::done;
    } catch (const TaskCancelled&) {
        outcome.status = TaskStatus::cancelled;
        outcome.outputs.clear();
        outcome.error = "cancelled";
    } catch (const std::exception& e) {
        outcome.status = TaskStatus::failed;
        outcome.outputs.clear();
        outcome.error = e.what();
    } catch (...) {
        outcome.status = TaskStatus::failed;
        outcome.outputs.clear();
        outcome.error = "unknown exception";
    }
    outcome.duration = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return outcome;
}

namespace {
std::string file_problem(const std::filesystem::path& path) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec)) return path.string() + " is missing";
    if (std::filesystem::file_size(path, ec) == 0) return path.string() + " is empty";
    try {
        if (path.extension() == ".safetensors") {
            formats::SafetensorsFile::open(path.string());
        } else if (path.extension() == ".json") {
            std::ifstream in(path);
            if (!nlohmann::json::accept(in)) return path.string() + " is damaged: not JSON";
        }
    } catch (const std::exception& e) {
        return path.string() + " is damaged: " + e.what();
    }
    return {};
}
}  // namespace

std::string damaged_artifact(const TaskKind& kind, const TaskContext& context) {
    for (const auto& path : kind.artifacts(context))
        if (std::string why = file_problem(path); !why.empty()) return why;
    return {};
}

}  // namespace compatbench
