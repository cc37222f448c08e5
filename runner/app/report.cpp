// `compatbench report OUT_DIR`: the HTML report of a run (figures and key tables), written by
// report/make_report.py with Debian's python3-h5py, -numpy and -matplotlib into
// OUT_DIR/report/index.html.
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "app/verbs.h"
#include "core/text_template.h"
#include "exec/signals.h"

namespace compatbench {

int verb_report(const std::string& out_dir, const std::string& script, std::string python) {
    namespace fs = std::filesystem;
    if (!fs::exists(fs::path(out_dir) / "results.h5")) {
        std::cerr << "compatbench report: " << out_dir << ": no results.h5 (run first)\n";
        return kExitBadInput;
    }
    if (!fs::exists(script)) {
        std::cerr << "compatbench report: " << script << ": no report script (--script)\n";
        return kExitBadInput;
    }
    // Debian's packages belong to /usr/bin/python3; the first python3 on PATH may lack them.
    if (python.empty()) python = fs::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
    const std::string cmd =
        shell_quote(python) + " " + shell_quote(script) + " " + shell_quote(out_dir);
    const int status = std::system(cmd.c_str());
    if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        std::cerr << "compatbench report: " << cmd << " failed (does " << python
                  << " have h5py, numpy and matplotlib?)\n";
        return kExitBadInput;
    }
    return kExitOk;
}

}  // namespace compatbench
