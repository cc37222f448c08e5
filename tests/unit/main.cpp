// The unit tests' main. Their commands run under the guard the build made
// (core/guard.h), which is not beside this binary.
#include <gtest/gtest.h>

#include <cstdlib>

int main(int argc, char** argv) {
    setenv("COMPATBENCH_GUARD", COMPATBENCH_GUARD_PATH, 0);
    ::testing::InitGoogleTest(&argc, argv);
    return RUN_ALL_TESTS();
}
