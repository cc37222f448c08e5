// Task kind `noop`: does nothing but return a value drawn from its seed. Exercises the
// runner (dispatch rate, determinism) without any work.
#include "common/hash.h"
#include "kind/task_kind.h"

namespace compatbench {

namespace {
class NoopTask final : public TaskKind {
  public:
    std::string_view name() const override { return "noop"; }
    std::vector<KeyRule> keys() const override { return {}; }
    std::vector<ColumnSpec> outputs(const TaskGroup&, const YamlChecker&) const override {
        return {{"value", ColumnType::f64, 0}};
    }

  protected:
    Row run_(const TaskContext& context) const override {
        return {unit_double(splitmix64(context.seed))};
    }
};
}  // namespace

const TaskKind& noop_task() {
    static const NoopTask kind;
    return kind;
}

}  // namespace compatbench
