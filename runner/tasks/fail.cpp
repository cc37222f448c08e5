// Task kind `fail`: throws on its first `fail_attempts` attempts (always, when the key is
// absent), then succeeds. Exercises failure records, retries and skipped dependents.
#include <stdexcept>

#include "common/hash.h"
#include "kind/task_kind.h"

namespace compatbench {

namespace {
class FailTask final : public TaskKind {
  public:
    std::string_view name() const override { return "fail"; }
    std::vector<KeyRule> keys() const override {
        return {{.name = "fail_attempts", .type = KeyType::integer, .min = 0, .max = 1000},
                {.name = "message", .type = KeyType::string}};
    }
    std::shared_ptr<const KindSettings> bind(const TaskGroup& group, const std::vector<TaskGroup>&,
                                             const YamlChecker&) const override {
        return std::make_shared<Settings>(
            Params(group.params).text("message", "deliberate failure"));
    }
    std::vector<ColumnSpec> outputs(const TaskGroup&, const YamlChecker&) const override {
        return {{"attempt", ColumnType::i64, 0}, {"value", ColumnType::f64, 0}};
    }

  protected:
    Row run_(const TaskContext& context) const override {
        // The grid point's (a grid may vary it), else the group's.
        const std::int64_t fail_attempts = context.integer("fail_attempts", -1);
        if (fail_attempts < 0 || context.attempt <= fail_attempts)
            throw std::runtime_error(context.settings<Settings>().message + " (attempt " +
                                     std::to_string(context.attempt) + ")");
        return {std::int64_t{context.attempt}, unit_double(splitmix64(context.seed))};
    }

  private:
    struct Settings final : KindSettings {
        explicit Settings(std::string m) : message(std::move(m)) {}
        std::string message;
    };
};
}  // namespace

const TaskKind& fail_task() {
    static const FailTask kind;
    return kind;
}

}  // namespace compatbench
