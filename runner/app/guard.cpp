// `compatbench-guard`: the guard of a command task (core/guard.h).
#include "core/guard.h"

int main(int argc, char** argv) { return compatbench::guard_main(argc, argv); }
