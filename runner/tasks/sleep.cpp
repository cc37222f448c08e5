// Task kind `sleep`: waits `seconds` (in slices, so that an abandoning run can cancel it)
// and returns the requested time and a seed-drawn value. Exercises scheduling and signals.
#include <chrono>
#include <thread>

#include "common/hash.h"
#include "config/config.h"
#include "kind/task_kind.h"

namespace compatbench {

namespace {
class SleepTask final : public TaskKind {
  public:
    std::string_view name() const override { return "sleep"; }
    std::vector<KeyRule> keys() const override {
        return {{.name = "seconds", .type = KeyType::real, .min = 0.0, .max = 86400.0}};
    }
    std::vector<ColumnSpec> outputs(const TaskGroup& group,
                                    const YamlChecker& checker) const override {
        bool in_grid = false;
        for (const auto& [key, values] : group.grid) in_grid = in_grid || key == "seconds";
        if (!group.params.count("seconds") && !in_grid) {
            checker.fail(group.node, "tasks." + group.name + ".seconds",
                         "missing required key 'seconds' (in the entry or its grid)");
        }
        return {{"slept", ColumnType::f64, 0}, {"value", ColumnType::f64, 0}};
    }

  protected:
    Row run_(const TaskContext& context) const override {
        const double seconds = context.real("seconds", 0.0);
        using Clock = std::chrono::steady_clock;
        const auto end = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                            std::chrono::duration<double>(seconds));
        while (true) {
            if (context.cancel.load(std::memory_order_relaxed)) throw TaskCancelled{};
            const Clock::duration left = end - Clock::now();
            if (left <= Clock::duration::zero()) break;
            std::this_thread::sleep_for(
                std::min<Clock::duration>(left, std::chrono::milliseconds(10)));
        }
        return {seconds, unit_double(splitmix64(context.seed))};
    }
};
}  // namespace

const TaskKind& sleep_task() {
    static const SleepTask kind;
    return kind;
}

}  // namespace compatbench
