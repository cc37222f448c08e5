// A command under its guard: exit codes and signals relayed, the group ended whole, the log
// capped with its head and tail kept.
#include "core/child_process.h"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

using namespace compatbench;
namespace fs = std::filesystem;
using std::chrono::milliseconds;

namespace {
fs::path log_file(const std::string& name) {
    const fs::path p = fs::path(::testing::TempDir()) / ("child_process_" + name + ".log");
    fs::remove(p);
    return p;
}
int run_to_end(const std::string& command, const fs::path& log, std::uint64_t limit = 0) {
    ChildProcess child(command, log, limit, milliseconds(500));
    while (!child.wait_for(milliseconds(10))) {
    }
    child.drain(true);
    return child.status();
}
std::string read(const fs::path& p) {
    std::ifstream in(p);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}
}  // namespace

TEST(ChildProcess, TheGuardRelaysExitCodesAndSignals) {
    const fs::path log = log_file("relay");
    int status = run_to_end("exit 7", log);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 7);
    status = run_to_end("kill -TERM $$", log);
    ASSERT_TRUE(WIFSIGNALED(status));
    EXPECT_EQ(WTERMSIG(status), SIGTERM);
    status = run_to_end("echo out; echo err >&2", log);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    EXPECT_EQ(read(log), "out\nerr\n");
}

TEST(ChildProcess, EndGroupKillsAChildThatIgnoresSigterm) {
    const fs::path log = log_file("group");
    const fs::path flag = fs::path(::testing::TempDir()) / "child_process_survivor";
    fs::remove(flag);
    ChildProcess child("(trap '' TERM; sleep 2; touch " + flag.string() + ") & wait", log, 0,
                       milliseconds(300));
    EXPECT_FALSE(child.wait_for(milliseconds(200)));
    // No clock is asserted here (a loaded machine stretches any bound): end_group returns
    // only once no member of the group is left, and the survivor's file must never appear.
    child.end_group();
    EXPECT_FALSE(child.group_alive());
    std::this_thread::sleep_for(milliseconds(2500));
    EXPECT_FALSE(fs::exists(flag)) << "the child that ignored SIGTERM lived on";
}

TEST(ChildProcess, TheLogKeepsHeadAndTailWithinItsLimit) {
    const fs::path log = log_file("capped");
    run_to_end("i=0; while [ $i -lt 2000 ]; do echo line$i; i=$((i+1)); done", log, 1000);
    const std::string text = read(log);
    EXPECT_LT(text.size(), 1200u);
    EXPECT_EQ(text.rfind("line0\n", 0), 0u);
    EXPECT_NE(text.find("bytes of output cut here"), std::string::npos);
    EXPECT_EQ(text.substr(text.size() - 9), "line1999\n");
}

// A program run in the foreground: its exit status, the environment set over the rank's,
// and a program that does not exist.
TEST(RunProgram, RelaysTheStatusWithTheEnvironmentSetOverTheRanks) {
    int status = run_program({"/bin/sh", "-c", "exit 3"});
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 3);
    status =
        run_program({"sh", "-c", "test \"$CB_X\" = 'a b' && test -n \"$PATH\""}, {{"CB_X", "a b"}});
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0);  // found on PATH, sees CB_X and keeps PATH
    EXPECT_EQ(run_program({"/nonexistent/program"}), -1);
}
