// `compatbench report OUT_DIR [--library RESULTS.h5]`: the HTML report of a run (figures and
// key tables), written by the Python package's report (python3 -m compatnets.report) with
// Debian's python3-h5py, -numpy and -matplotlib into OUT_DIR/report/index.html. Given an
// advice file (`advise merge --json FILE`) instead, its page: FILE's stem +
// _advice/report/index.html.
#include <sys/wait.h>

#include <filesystem>
#include <iostream>
#include <vector>

#include "app/verbs.h"
#include "core/child_process.h"
#include "exec/signals.h"

namespace compatbench {

int verb_report(const std::string& out_dir, const std::string& package, const std::string& library,
                std::string python) {
    namespace fs = std::filesystem;
    const bool advice = fs::is_regular_file(out_dir) && fs::path(out_dir).extension() == ".json";
    if (!advice && !fs::exists(fs::path(out_dir) / "results.h5")) {
        std::cerr << "compatbench report: " << out_dir << ": no results.h5 (run first)\n";
        return kExitBadInput;
    }
    if (!library.empty() && !fs::exists(library)) {
        std::cerr << "compatbench report: " << library << ": no such results file (--library)\n";
        return kExitBadInput;
    }
    // The folder that holds the package (compatnets/report/ within it).
    const fs::path root = fs::absolute(package).lexically_normal();
    if (!fs::exists(root / "compatnets" / "report" / "__main__.py")) {
        std::cerr << "compatbench report: " << package
                  << ": not the report package's folder (one holding compatnets/report/; "
                     "--package)\n";
        return kExitBadInput;
    }
    // Debian's packages belong to /usr/bin/python3; the first python3 on PATH may lack them.
    if (python.empty()) python = fs::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
    // `python3 -m compatnets.report` with the chosen copy first on the path: -m alone would
    // put the working folder first, and a compatnets/ there would win over --package.
    const std::string launch =
        "import runpy, sys; sys.path.insert(0, sys.argv.pop(1)); "
        "runpy.run_module('compatnets.report', run_name='__main__', alter_sys=True)";
    std::vector<std::string> argv = {python, "-c", launch, root.string(), out_dir};
    if (!library.empty()) argv.insert(argv.end(), {"--library", library});
    // This binary, for the advice checked against the merging study
    // (compatnets/report/advice_study.py).
    std::error_code ec;
    const fs::path self = fs::read_symlink("/proc/self/exe", ec);
    if (!ec) argv.insert(argv.end(), {"--compatbench", self.string()});
    const int status = run_program(argv);
    if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        std::cerr << "compatbench report: " << python << " -m compatnets.report failed ("
                  << (status == -1 ? "could not start it" : exit_status_text(status)) << "; does "
                  << python << " have h5py, numpy and matplotlib?)\n";
        return kExitBadInput;
    }
    return kExitOk;
}

}  // namespace compatbench
