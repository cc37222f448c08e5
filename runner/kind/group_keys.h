// Keys of a task group that several kinds read (integer and string lists, the earlier group
// a key names) and the list parameters of listed tasks.
#pragma once

#include <string>
#include <vector>

#include "config/config.h"
#include "kind/task_kind.h"

namespace compatbench {

// Appends `item` to a comma-separated label (a key column such as a merge's members).
void append_csv(std::string& list, const std::string& item);
// A list parameter (ListedTask::lists) from texts or integers, and back.
std::vector<Scalar> list_of(const std::vector<std::string>& texts);
std::vector<Scalar> list_of(const std::vector<int>& values);
std::vector<int> ints_of(const std::vector<Scalar>& list);

// An integer list key (`k: [10, 20]` or `k: 10`), each within [lo, hi]; `fallback` if absent.
std::vector<int> int_list_key(const TaskGroup& group, const std::string& key,
                              const YamlChecker& checker, std::vector<int> fallback, int lo,
                              int hi);
// A string list key; `fallback` if absent.
std::vector<std::string> string_list_key(const TaskGroup& group, const std::string& key,
                                         const YamlChecker& checker,
                                         std::vector<std::string> fallback);

// The earlier group named by `key` of `group`, which must be of kind `kind`.
const TaskGroup& earlier_group(const TaskGroup& group, const std::string& key,
                               const std::vector<TaskGroup>& earlier, const std::string& kind,
                               const YamlChecker& checker);

}  // namespace compatbench
