// Binding (experiment/experiment.h): each group finds its kind, which checks its keys and
// names its output columns; each analysis finds its kind, checked against its input's
// columns; whatever does not bind is one ConfigError naming file, line and key.
#include <gtest/gtest.h>

#include "analyses/analysis_kind.h"
#include "experiment/experiment.h"
#include "tasks/task_kind.h"

using namespace compatbench;

namespace {
std::string error_of(const std::string& yaml) {
    try {
        parse_config(yaml, "t.yaml");
    } catch (const ConfigError& e) {
        return e.what();
    }
    return "";
}
const char* kHead = "experiment: {name: t, seed: 1}\ntasks:\n";
}  // namespace

TEST(Experiment, GroupsAndAnalysesAreBoundToTheirKinds) {
    const Config c = parse_config(
        std::string(kHead) +
            "  - {name: work, kind: command, count: 3, command: 'true',\n"
            "     outputs: {x: float, y: float, label: 'str:8'}}\n"
            "analyses:\n"
            "  - {name: corr, kind: correlation, study: demo, input: work, x: x, y: y}\n",
        "t.yaml");
    ASSERT_EQ(c.groups.size(), 1u);
    ASSERT_NE(c.groups[0].kind, nullptr);
    EXPECT_EQ(c.groups[0].kind->name(), "command");
    ASSERT_EQ(c.groups[0].outputs.size(), 3u);
    EXPECT_EQ(c.groups[0].outputs[2].name, "label");
    EXPECT_EQ(c.groups[0].outputs[2].type, ColumnType::str);
    EXPECT_EQ(c.groups[0].params.at("command").text, "true");
    ASSERT_EQ(c.analyses.size(), 1u);
    ASSERT_NE(c.analyses[0].kind, nullptr);
    EXPECT_EQ(c.analyses[0].kind->name(), "correlation");
}

TEST(Experiment, WhatDoesNotBindIsNamedWithItsLine) {
    std::string why = error_of(std::string(kHead) + "  - {name: a, kind: nope}\n");
    EXPECT_NE(why.find("t.yaml:3:"), std::string::npos) << why;
    EXPECT_NE(why.find("nope"), std::string::npos) << why;
    why = error_of(std::string(kHead) + "  - {name: a, kind: sleep, seconds: -1}\n");
    EXPECT_NE(why.find("seconds"), std::string::npos) << why;
    why = error_of(std::string(kHead) +
                   "  - {name: a, kind: noop}\n"
                   "analyses:\n"
                   "  - {name: k, kind: kruskal, study: s, input: a, by: region, values: [v]}\n");
    EXPECT_NE(why.find("t.yaml:5:"), std::string::npos) << why;
    EXPECT_NE(why.find("region"), std::string::npos) << why;
    why = error_of(std::string(kHead) +
                   "  - {name: a, kind: noop}\n"
                   "analyses:\n"
                   "  - {name: k, kind: correlation, study: s, input: b, x: v, y: v}\n");
    EXPECT_NE(why.find("'b'"), std::string::npos) << why;
}
