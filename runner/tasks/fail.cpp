// Task kind `fail`: throws on its first `fail_attempts` attempts (always, when the key is
// absent), then succeeds. Exercises failure records, retries and skipped dependents.
#include <stdexcept>

#include "common/hash.h"
#include "tasks/task_kind.h"

namespace compatbench {

namespace {
class FailTask final : public TaskKind {
  public:
    std::string_view name() const override { return "fail"; }
    std::vector<KeyRule> keys() const override {
        return {{.name = "fail_attempts", .type = KeyType::integer, .min = 0, .max = 1000},
                {.name = "message", .type = KeyType::string}};
    }
    std::vector<ColumnSpec> outputs(const TaskGroup&, const YamlChecker&) const override {
        return {{"attempt", ColumnType::i64, 0}, {"value", ColumnType::f64, 0}};
    }

  protected:
    Row run_(const TaskContext& context) const override {
        const std::int64_t fail_attempts = context.integer("fail_attempts", -1);
        if (fail_attempts < 0 || context.attempt <= fail_attempts) {
            const Scalar* message = context.find("message");
            throw std::runtime_error((message ? message->text : std::string("deliberate failure")) +
                                     " (attempt " + std::to_string(context.attempt) + ")");
        }
        return {std::int64_t{context.attempt}, unit_double(splitmix64(context.seed))};
    }
};
}  // namespace

const TaskKind& fail_task() {
    static const FailTask kind;
    return kind;
}

}  // namespace compatbench
