// Task kind `command`: a templated shell command, e.g. a user's script that extracts
// features or evaluates a checkpoint.
//
//   - name: evaluate
//     kind: command
//     grid: {model: [a, b]}
//     command: "python3 eval.py --model {model} --seed {seed} --out {result}"
//     outputs: {accuracy: float, n: int, label: "str:32"}
//     timeout: 600
//     retries: 2
//
// Placeholders: any scalar key or grid key, and {id}, {seed}, {attempt}, {result} (the JSON
// file the command writes), {workdir} (a folder of its own), {out} (the run's folder),
// {config_dir} (the config file's folder, so that a config can name scripts beside it).
// Every substituted value is shell-quoted; `{{` and `}}` are literal braces. stdout and
// stderr go to <out>/logs/tasks/<id>.log. The result file must hold one JSON object with a
// key per declared output.
#include <sys/wait.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>

#include "common/hash.h"
#include "config/config.h"
#include "core/child_process.h"
#include "tasks/shell_task.h"
#include "tasks/task_kind.h"

namespace compatbench {

namespace {

using Clock = std::chrono::steady_clock;
constexpr std::chrono::milliseconds kGrace{2000};  // from SIGTERM to SIGKILL

std::string tail_of_file(const std::filesystem::path& path, std::size_t max_bytes) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return {};
    in.seekg(0, std::ios::end);
    const auto size = static_cast<std::size_t>(in.tellg());
    const std::size_t from = size > max_bytes ? size - max_bytes : 0;
    in.seekg(static_cast<std::streamoff>(from));
    std::string text(size - from, '\0');
    in.read(text.data(), static_cast<std::streamsize>(text.size()));
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
    return text;
}

std::vector<ColumnSpec> parse_outputs(const TaskGroup& group, const YamlChecker& checker) {
    std::vector<ColumnSpec> columns;
    const YAML::Node outputs = group.node["outputs"];
    if (!outputs) return columns;
    const std::string path = "tasks." + group.name + ".outputs";
    if (!outputs.IsMap()) checker.fail(outputs, path, "expected a map of column: type");
    for (const auto& entry : outputs) {
        const std::string name = entry.first.as<std::string>();
        const std::string key = path + "." + name;
        const std::string type = checker.as_string(entry.second, key);
        ColumnSpec column{name, ColumnType::f64, 0};
        if (type == "float") {
            column.type = ColumnType::f64;
        } else if (type == "int") {
            column.type = ColumnType::i64;
        } else if (type == "uint") {
            column.type = ColumnType::u64;
        } else if (type.rfind("str", 0) == 0) {
            column.type = ColumnType::str;
            column.width = 64;
            if (type.size() > 3) {
                const Scalar width = Scalar::parse(type.substr(type.find(':') + 1));
                if (type[3] != ':' || width.kind != Scalar::Kind::integer || width.integer < 1 ||
                    width.integer > 65536) {
                    checker.fail(
                        entry.second, key,
                        "string width must be 'str:N' with N in [1, 65536], got '" + type + "'");
                }
                column.width = static_cast<std::size_t>(width.integer);
            }
        } else {
            checker.fail(entry.second, key,
                         "unknown output type '" + type + "' (float, int, uint, str, str:N)");
        }
        columns.push_back(column);
    }
    return columns;
}

class CommandTask final : public TaskKind {
  public:
    std::string_view name() const override { return "command"; }
    std::vector<KeyRule> keys() const override {
        return with_command_keys({{.name = "command", .type = KeyType::string, .required = true},
                                  {.name = "outputs", .type = KeyType::map},
                                  {.name = "keep_background", .type = KeyType::boolean}});
    }
    std::vector<ColumnSpec> outputs(const TaskGroup& group,
                                    const YamlChecker& checker) const override {
        // Every placeholder must name something a task will have.
        std::vector<std::string> known = {"id",      "seed", "attempt",   "result",
                                          "workdir", "out",  "config_dir"};
        for (const auto& [key, value] : group.params) known.push_back(key);
        for (const auto& [key, values] : group.grid) known.push_back(key);
        if (group.count >= 0) known.push_back("i");
        const YAML::Node command = group.node["command"];
        try {
            TextTemplate::parse(command.Scalar(), known);
            check_placeholders_unquoted(command.Scalar());
        } catch (const std::invalid_argument& e) {
            checker.fail(command, "tasks." + group.name + ".command", e.what());
        }
        check_command_keys(group, checker, true);
        return parse_outputs(group, checker);
    }

  protected:
    Row run_(const TaskContext& context) const override {
        return run_shell_task(context, context.params.at("command").text, {},
                              context.group.outputs);
    }
};
}  // namespace

namespace {
Row read_result(const std::filesystem::path& path, const std::vector<ColumnSpec>& columns) {
    Row row;
    if (columns.empty()) return row;
    std::ifstream in(path);
    if (!in) throw std::runtime_error("result file " + path.string() + " was not written");
    nlohmann::json json;
    try {
        json = nlohmann::json::parse(in);
    } catch (const nlohmann::json::exception& e) {
        throw std::runtime_error("result file " + path.string() + ": not JSON: " + e.what());
    }
    if (!json.is_object()) {
        throw std::runtime_error("result file " + path.string() + ": expected a JSON object");
    }
    for (const auto& column : columns) {
        auto it = json.find(column.name);
        if (it == json.end()) {
            throw std::runtime_error("result file " + path.string() + ": missing key '" +
                                     column.name + "'");
        }
        try {
            row.push_back(value_from_json(*it, column));
        } catch (const std::exception& e) {
            throw std::runtime_error("result file " + path.string() + ": " + e.what());
        }
    }
    return row;
}
}  // namespace

namespace {
// The values every command sees: the task's parameters, {id}, {seed}, {attempt}, {result},
// {workdir}, {out}, {config_dir}.
std::map<std::string, std::string> shell_values(const TaskContext& context,
                                                const std::filesystem::path& result,
                                                const std::filesystem::path& workdir) {
    std::map<std::string, std::string> values;
    for (const auto& [key, scalar] : context.params) values[key] = scalar.text;
    values["id"] = context.id;
    values["seed"] = std::to_string(context.seed);
    values["attempt"] = std::to_string(context.attempt);
    values["result"] = result.string();
    values["workdir"] = workdir.string();
    values["out"] = context.out_dir.string();
    values["config_dir"] = context.group.config_dir.string();
    return values;
}
}  // namespace

std::vector<KeyRule> command_keys() { return {{.name = "env", .type = KeyType::map}}; }

namespace {
// The thread-count variables of the usual numeric libraries.
constexpr const char* kThreadVariables[] = {"OMP_NUM_THREADS", "MKL_NUM_THREADS",
                                            "OPENBLAS_NUM_THREADS", "NUMEXPR_NUM_THREADS",
                                            "VECLIB_MAXIMUM_THREADS"};
const std::regex kVariableName("[A-Za-z_][A-Za-z0-9_]*");
}  // namespace

std::vector<KeyRule> with_command_keys(std::vector<KeyRule> keys) {
    for (auto& k : command_keys()) keys.push_back(std::move(k));
    return keys;
}

bool evaluates_by_command(const TaskGroup& group) {
    return group.params.count("evaluate") && group.params.at("evaluate").text == "command";
}

void check_command_keys(const TaskGroup& group, const YamlChecker& checker, bool runs_command) {
    const YAML::Node env = group.node["env"];
    if (!env) return;
    const std::string path = "tasks." + group.name + ".env";
    if (!runs_command)
        checker.fail(env, path, "the group runs no command (env: applies to evaluate: command)");
    for (const auto& e : env) {
        const std::string name = e.first.as<std::string>();
        if (!std::regex_match(name, kVariableName))
            checker.fail(e.first, path, "'" + name + "' is not an environment variable name");
        if (name == "CUDA_VISIBLE_DEVICES")
            checker.fail(e.first, path + "." + name,
                         "the runner sets CUDA_VISIBLE_DEVICES to the task's devices; ask for "
                         "them with gpus: N");
        if (!e.second.IsScalar())
            checker.fail(e.second, path + "." + name, "expected a scalar value");
    }
}

EnvOverrides command_environment(const TaskContext& context) {
    EnvOverrides env;
    env.emplace_back("CUDA_VISIBLE_DEVICES", join_devices(context.devices()));
    const int threads = context.resources ? context.resources->threads : 1;
    for (const char* name : kThreadVariables)
        if (!std::getenv(name)) env.emplace_back(name, std::to_string(threads));
    const YAML::Node group_env = context.group.node["env"];
    if (group_env)
        for (const auto& e : group_env) {
            const std::string name = e.first.as<std::string>();
            std::erase_if(env, [&](const auto& kv) { return kv.first == name; });
            env.emplace_back(name, e.second.Scalar());
        }
    return env;
}

void check_shell_template(const TaskContext& context, const std::string& command_template,
                          const std::vector<std::string>& more_names) {
    std::map<std::string, std::string> values = shell_values(context, "", "");
    for (const auto& name : more_names) values[name] = "";
    TextTemplate::parse(command_template, {}, true).render(values);
    check_placeholders_unquoted(command_template);
}

Row run_shell_task(const TaskContext& context, const std::string& command_template,
                   const std::map<std::string, std::string>& extra,
                   const std::vector<ColumnSpec>& columns,
                   const std::map<std::string, std::vector<std::string>>& lists) {
    namespace fs = std::filesystem;
    const std::string file_stem = task_file_stem(context.id);
    const fs::path workdir = context.out_dir / "work" / file_stem;
    const fs::path log_dir = context.out_dir / "logs" / "tasks";
    fs::create_directories(workdir);
    fs::create_directories(log_dir);
    const fs::path result = workdir / "result.json";
    const fs::path log_path = log_dir / (file_stem + ".log");
    fs::remove(result);

    std::map<std::string, std::string> values = shell_values(context, result, workdir);
    for (const auto& [key, value] : extra) values[key] = value;
    const std::string command =
        TextTemplate::parse(command_template, {}, true).render(values, true, lists);
    {
        std::ofstream log(log_path, std::ios::app);
        log << "### " << context.id << " attempt " << context.attempt << ": " << command << "\n";
    }

    const double timeout = context.group.timeout;
    const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                             std::chrono::duration<double>(timeout));
    // A daemon kept past its task writes to the file itself (no pipe to outlive).
    const bool keep_background = context.flag("keep_background");
    ChildProcess child(command, log_path, keep_background ? 0 : context.group.log_limit, kGrace,
                       command_environment(context));
    while (!child.wait_for(std::chrono::milliseconds(10))) {
        const bool timed_out = timeout > 0.0 && Clock::now() >= deadline;
        if (timed_out || context.cancel.load(std::memory_order_relaxed)) {
            child.end_group();
            child.drain(true);
            if (!timed_out) throw TaskCancelled{};
            throw std::runtime_error("timed out after " + std::to_string(timeout) +
                                     " s (log: " + log_path.string() + ")");
        }
    }
    // The task ends with its shell: background children it left are ended too, unless the
    // group keeps them (`keep_background: true`, for daemons that outlive their task).
    if (!keep_background && child.group_alive()) child.end_group();
    child.drain(true);
    const int status = child.status();
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        std::ostringstream why;
        if (WIFEXITED(status)) {
            why << "exit code " << WEXITSTATUS(status);
        } else {
            why << "killed by signal " << WTERMSIG(status);
        }
        why << " (log: " << log_path.string() << "): " << tail_of_file(log_path, 300);
        throw std::runtime_error(why.str());
    }
    return read_result(result, columns);
}

const TaskKind& command_task() {
    static const CommandTask kind;
    return kind;
}

}  // namespace compatbench
