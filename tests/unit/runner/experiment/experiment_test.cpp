// Binding (experiment/experiment.h): each group finds its kind, which checks its keys and
// names its output columns; each analysis finds its kind, checked against its input's
// columns; whatever does not bind is one ConfigError naming file, line and key.
#include <gtest/gtest.h>

#include "analyses/analysis_kind.h"
#include "experiment/experiment.h"
#include "kind/task_kind.h"

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

// A kind reads its keys once, when its group is bound, into its settings; the YAML entry is
// not kept past binding. A grid varies only numeric kind keys: the others are bound once.
TEST(Experiment, KindsBindTheirSettingsOnceAndKeepNoYaml) {
    const Config c = parse_config(std::string(kHead) +
                                      "  - {name: f, kind: fail, message: boom,\n"
                                      "     grid: {fail_attempts: [1, 3]}}\n"
                                      "  - {name: w, kind: command, count: 1, command: 'true',\n"
                                      "     env: {A: '1'}}\n"
                                      "  - {name: n, kind: noop, count: 2}\n",
                                  "t.yaml");
    ASSERT_EQ(c.groups.size(), 3u);
    for (const auto& g : c.groups) EXPECT_TRUE(g.node.IsNull()) << g.name;
    EXPECT_NE(c.groups[0].settings, nullptr);
    EXPECT_NE(c.groups[1].settings, nullptr);
    EXPECT_EQ(c.groups[2].settings, nullptr);             // noop keeps none
    EXPECT_EQ(c.groups[1].entry.at("env").at("A"), "1");  // the entry as JSON stays

    const std::string why =
        error_of(std::string(kHead) + "  - {name: f, kind: fail, grid: {message: [a, b]}}\n");
    EXPECT_NE(why.find("t.yaml:3:"), std::string::npos) << why;
    EXPECT_NE(why.find("numeric keys"), std::string::npos) << why;
    EXPECT_NE(why.find("'message'"), std::string::npos) << why;
    // A kind that lists its own tasks refuses a grid before anything else about it.
    const std::string listing = error_of(std::string(kHead) +
                                         "  - {name: p, kind: probe_knn, features: f,\n"
                                         "     grid: {message: [a]}}\n");
    EXPECT_NE(listing.find("lists its own tasks"), std::string::npos) << listing;
    // A grid over a key that is not the kind's stays a placeholder of any type.
    EXPECT_EQ(error_of(std::string(kHead) + "  - {name: c, kind: command, command: 'echo {m}',\n"
                                            "     grid: {m: [a, b]}}\n"),
              "");
}
