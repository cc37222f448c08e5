// `{name}` templates of command tasks; substituted values are shell-quoted.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/value.h"

namespace compatbench {

struct TaskContext;

// 'text' with every ' written as '\'' : safe as one word of /bin/sh.
std::string shell_quote(const std::string& text);

// A file-name-safe, unique stem for a task id: unsafe characters become '_' and an 8-digit
// hash of the id keeps ids that differ only in such characters apart.
std::string task_file_stem(const std::string& id);

class CommandTemplate {
  public:
    // Throws std::invalid_argument for an unclosed brace, an empty name, or (unless
    // `any_name`) a name not in `known`.
    static CommandTemplate parse(const std::string& text, const std::vector<std::string>& known,
                                 bool any_name = false);
    // Throws std::invalid_argument naming a placeholder missing from `values`.
    std::string render(const std::map<std::string, std::string>& values, bool quote = true) const;

  private:
    struct Piece {
        bool placeholder;
        std::string text;
    };
    std::vector<Piece> pieces_;
};

// Runs `command_template` (placeholders: the task's parameters, {id}, {seed}, {attempt},
// {result}, {workdir}, {out}, and `extra`) as a command task does: /bin/sh in its own
// process group, log under <out>/logs/tasks/, the group's timeout, cancellation; then reads
// one value per column from the JSON result file. Throws with the log's tail on failure.
Row run_shell_task(const TaskContext& context, const std::string& command_template,
                   const std::map<std::string, std::string>& extra,
                   const std::vector<ColumnSpec>& columns);

}  // namespace compatbench
