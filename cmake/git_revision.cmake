# Writes OUT (a header defining COMPATBENCH_GIT_REVISION) from `git describe`, touching it
# only when the revision changed. Run at every build, so /meta/git_revision is never stale.
execute_process(COMMAND git describe --always --dirty --abbrev=12
    WORKING_DIRECTORY ${SOURCE_DIR} OUTPUT_VARIABLE revision
    OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT revision)
    set(revision "unknown")
endif()
set(text "#pragma once\n#define COMPATBENCH_GIT_REVISION \"${revision}\"\n")
if(EXISTS ${OUT})
    file(READ ${OUT} old)
endif()
if(NOT "${old}" STREQUAL "${text}")
    file(WRITE ${OUT} "${text}")
endif()
