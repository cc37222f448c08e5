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
// file the command writes), {workdir} (a folder of its own, made when the command names it
// or {result}), {out} (the run's folder),
// {config_dir} (the config file's folder, so that a config can name scripts beside it).
// Every substituted value is shell-quoted; `{{` and `}}` are literal braces. stdout and
// stderr go to <out>/logs/tasks/<id>.log. The result file must hold one JSON object with a
// key per declared output.
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>

#include "commands/shell_task.h"
#include "common/hash.h"
#include "config/config.h"
#include "core/child_process.h"
#include "kind/task_kind.h"

namespace compatbench {

namespace {

class CommandTask final : public TaskKind {
  public:
    std::string_view name() const override { return "command"; }
    std::vector<KeyRule> keys() const override {
        return with_command_keys({{.name = "command", .type = KeyType::string, .required = true},
                                  {.name = "outputs", .type = KeyType::map},
                                  {.name = "keep_background", .type = KeyType::boolean}});
    }
    std::shared_ptr<const KindSettings> bind(const TaskGroup& group, const std::vector<TaskGroup>&,
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
        return std::make_shared<Settings>(bind_command_keys(group, checker, true));
    }
    std::vector<ColumnSpec> outputs(const TaskGroup& group,
                                    const YamlChecker& checker) const override {
        return parse_outputs(group, checker);
    }

    bool runs_command(const TaskGroup&) const override { return true; }

  protected:
    Row run_(const TaskContext& context) const override {
        return run_shell_task(context, context.settings<Settings>().keys, {},
                              context.group.outputs);
    }

  private:
    struct Settings final : KindSettings {
        explicit Settings(CommandKeys k) : keys(std::move(k)) {}
        CommandKeys keys;
    };
};
}  // namespace

const TaskKind& command_task() {
    static const CommandTask kind;
    return kind;
}

}  // namespace compatbench
