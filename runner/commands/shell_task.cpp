// The shell part of command tasks (commands/shell_task.h): a spawned process per task, or a
// task sent to the group's long-lived server (commands/command_server.h).
#include "commands/shell_task.h"

#include <sys/wait.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <sstream>
#include <stdexcept>

#include "commands/command_server.h"
#include "core/child_process.h"
#include "kind/task_kind.h"

namespace compatbench {

namespace {
using Clock = std::chrono::steady_clock;
constexpr std::chrono::milliseconds kGrace{2000};  // from SIGTERM to SIGKILL
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

std::vector<KeyRule> command_keys() {
    return {{.name = "env", .type = KeyType::map}, {.name = "server", .type = KeyType::string}};
}

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

bool evaluates_by_command(const TaskGroup& group) {
    return group.params.count("evaluate") && group.params.at("evaluate").text == "command";
}

namespace {
// `server:` a command template of {config_dir}, {out}, {rank}, {group}; the group's `command`
// then gives the served task's arguments: plain words and placeholders.
void check_server(const TaskGroup& group, const YamlChecker& checker) {
    const YAML::Node server = group.node["server"];
    const std::string path = "tasks." + group.name + ".server";
    try {
        TextTemplate::parse(server.Scalar(), {"config_dir", "out", "rank", "group"});
        check_placeholders_unquoted(server.Scalar());
    } catch (const std::invalid_argument& e) {
        checker.fail(server, path, e.what());
    }
    const YAML::Node command = group.node["command"];
    if (!command)
        checker.fail(server, path, "a served group needs 'command': the task's arguments");
    try {
        TextTemplate::parse(command.Scalar(), {}, true).check_plain_words();
    } catch (const std::invalid_argument& e) {
        checker.fail(command, "tasks." + group.name + ".command", e.what());
    }
}
}  // namespace

CommandKeys bind_command_keys(const TaskGroup& group, const YamlChecker& checker,
                              bool runs_command) {
    for (const char* key : {"env", "server"})
        if (group.node[key] && !runs_command)
            checker.fail(group.node[key], "tasks." + group.name + "." + key,
                         std::string("the group runs no command (") + key +
                             ": applies to evaluate: command)");
    if (group.node["server"]) check_server(group, checker);
    const Params keys(group.params);
    CommandKeys out{.command = keys.text("command", ""),
                    .served = keys.has("server"),
                    .server = keys.text("server", ""),
                    .env = {},
                    .keep_background = keys.flag("keep_background")};
    const YAML::Node env = group.node["env"];
    if (!env) return out;
    const std::string path = "tasks." + group.name + ".env";
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
        out.env.emplace_back(name, e.second.Scalar());
    }
    return out;
}

EnvOverrides command_environment(const TaskContext& context, const CommandKeys& keys) {
    EnvOverrides env;
    env.emplace_back("CUDA_VISIBLE_DEVICES", join_devices(context.devices()));
    const int threads = context.resources ? context.resources->threads : 1;
    for (const char* name : kThreadVariables)
        if (!std::getenv(name)) env.emplace_back(name, std::to_string(threads));
    for (const auto& [name, value] : keys.env) {
        std::erase_if(env, [&](const auto& kv) { return kv.first == name; });
        env.emplace_back(name, value);
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

namespace {
namespace fs = std::filesystem;

// Where a task's files go: its workdir, result file and log.
struct ShellFiles {
    fs::path workdir, result, log;
};

// The workdir is made for a command that can know it (one that names {workdir} or {result},
// and every served one): a folder per task is a file system's slowest step of a quick task.
ShellFiles prepare_files(const TaskContext& context, bool make_workdir) {
    const std::string file_stem = task_file_stem(context.id);
    ShellFiles f;
    f.workdir = context.out_dir / "work" / file_stem;
    const fs::path log_dir = context.out_dir / "logs" / "tasks";
    if (make_workdir) fs::create_directories(f.workdir);
    fs::create_directories(log_dir);
    f.result = f.workdir / "result.json";
    f.log = log_dir / (file_stem + ".log");
    fs::remove(f.result);
    return f;
}

void log_header(const ShellFiles& files, const TaskContext& context, const std::string& what) {
    std::ofstream log(files.log, std::ios::app);
    log << "### " << context.id << " attempt " << context.attempt << ": " << what << "\n";
}

std::optional<Clock::time_point> deadline_of(const TaskContext& context) {
    if (context.group.timeout <= 0.0) return std::nullopt;
    return Clock::now() + std::chrono::duration_cast<Clock::duration>(
                              std::chrono::duration<double>(context.group.timeout));
}

std::string timed_out(const TaskContext& context, const ShellFiles& files) {
    return "timed out after " + std::to_string(context.group.timeout) +
           " s (log: " + files.log.string() + ")";
}

// A non-zero exit of the task, with its log's tail.
[[noreturn]] void task_failed(const std::string& how, const ShellFiles& files) {
    throw std::runtime_error(how + " (log: " + files.log.string() +
                             "): " + tail_of_file(files.log, 300));
}

void run_spawned(const TaskContext& context, const CommandKeys& keys, const std::string& command,
                 const ShellFiles& files) {
    log_header(files, context, command);
    const auto deadline = deadline_of(context);
    // A daemon kept past its task writes to the file itself (no pipe to outlive).
    const bool keep_background = keys.keep_background;
    ChildProcess child(command, files.log, keep_background ? 0 : context.group.log_limit, kGrace,
                       command_environment(context, keys), -1, keep_background);
    while (!child.wait_for(std::chrono::milliseconds(10))) {
        const bool late = deadline && Clock::now() >= *deadline;
        if (late || context.cancel.load(std::memory_order_relaxed)) {
            child.end_group();
            child.drain(true);
            if (!late) throw TaskCancelled{};
            throw std::runtime_error(timed_out(context, files));
        }
    }
    // The task ends with its shell: background children it left are ended too, unless the
    // group keeps them (`keep_background: true`, for daemons that outlive their task).
    if (!keep_background && child.group_alive()) child.end_group();
    child.drain(true);
    const int status = child.status();
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return;
    task_failed(exit_status_text(status), files);
}

// The group's `server:` command for this rank: {config_dir}, {out}, {rank}, {group}.
std::string server_command(const TaskContext& context, const CommandKeys& keys) {
    const std::map<std::string, std::string> values = {
        {"config_dir", context.group.config_dir.string()},
        {"out", context.out_dir.string()},
        {"rank", std::to_string(context.rank)},
        {"group", context.group.name}};
    return TextTemplate::parse(keys.server, {}, true).render(values);
}

void run_served(const TaskContext& context, const CommandKeys& keys,
                const std::vector<std::string>& argv, const ShellFiles& files) {
    if (!context.servers) throw std::logic_error("a served task without a server pool");
    const std::string command = server_command(context, keys);
    std::string shown;
    for (const auto& a : argv) shown += " " + shell_quote(a);
    log_header(files, context, "served by " + command + " <-" + shown);
    const fs::path server_log =
        context.out_dir / "logs" / "servers" /
        (task_file_stem(context.group.name) + ".rank" + std::to_string(context.rank) + ".log");
    fs::create_directories(server_log.parent_path());
    const nlohmann::json request = {{"id", context.id},
                                    {"argv", argv},
                                    {"result", files.result.string()},
                                    {"workdir", files.workdir.string()},
                                    {"log", files.log.string()},
                                    {"attempt", context.attempt},
                                    {"seed", context.seed}};
    int code = 0;
    try {
        CommandServer& server =
            context.servers->get(command, server_log, command_environment(context, keys));
        code = server.run(request, deadline_of(context), context.cancel);
        if (context.group.server_per_task) context.servers->clear();
    } catch (const ServerTimeout&) {
        context.servers->prune();
        throw std::runtime_error(timed_out(context, files) + "; its server was ended");
    } catch (...) {
        context.servers->prune();  // a failed server is replaced for the next task
        throw;
    }
    if (code != 0) task_failed("exit code " + std::to_string(code), files);
}
}  // namespace

Row run_shell_task(const TaskContext& context, const CommandKeys& keys,
                   const std::map<std::string, std::string>& extra,
                   const std::vector<ColumnSpec>& columns,
                   const std::map<std::string, std::vector<std::string>>& lists) {
    const TextTemplate command = TextTemplate::parse(keys.command, {}, true);
    const bool served = keys.served;
    const ShellFiles files =
        prepare_files(context, served || command.uses("workdir") || command.uses("result"));
    std::map<std::string, std::string> values = shell_values(context, files.result, files.workdir);
    for (const auto& [key, value] : extra) values[key] = value;
    if (served)
        run_served(context, keys, command.words(values, lists), files);
    else
        run_spawned(context, keys, command.render(values, true, lists), files);
    return read_result(files.result, columns);
}

}  // namespace compatbench
