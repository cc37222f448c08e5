// The unit tests' main. Like compatbench's, it first lets the binary serve as the guard of
// the command tasks its tests start (core/child_process.h).
#include <gtest/gtest.h>

#include "core/child_process.h"

int main(int argc, char** argv) {
    if (const int guard = compatbench::guard_main(argc, argv); guard >= 0) return guard;
    ::testing::InitGoogleTest(&argc, argv);
    return RUN_ALL_TESTS();
}
