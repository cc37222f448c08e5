// `compatbench report OUT_DIR [--library RESULTS.h5]`: the HTML report of a run (figures and
// key tables), written by the report package (python3 -m report) with Debian's python3-h5py,
// -numpy and -matplotlib into OUT_DIR/report/index.html. Given an advice file
// (`advise merge --json FILE`) instead, its page: FILE's stem + _advice/report/index.html.
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "app/verbs.h"
#include "core/text_template.h"
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
    fs::path pkg = fs::absolute(package).lexically_normal();
    if (!pkg.has_filename()) pkg = pkg.parent_path();  // "report/"
    if (!fs::exists(pkg / "__main__.py") || pkg.filename() != "report") {
        std::cerr << "compatbench report: " << package
                  << ": not the report package (a folder report/ with __main__.py; --package)\n";
        return kExitBadInput;
    }
    // Debian's packages belong to /usr/bin/python3; the first python3 on PATH may lack them.
    if (python.empty()) python = fs::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
    // `python3 -m report`, with the package's parent first on the path (before the working
    // folder, which may hold a run's own report/ output folder).
    const std::string run =
        "import runpy, sys; sys.path.insert(0, sys.argv[1]); del sys.argv[1]; "
        "runpy.run_module('report', run_name='__main__', alter_sys=True)";
    std::string cmd = shell_quote(python) + " -c " + shell_quote(run) + " " +
                      shell_quote(pkg.parent_path().string()) + " " + shell_quote(out_dir);
    if (!library.empty()) cmd += " --library " + shell_quote(library);
    // This binary, for the advice checked against the merging study (report/advice_study.py).
    std::error_code ec;
    const fs::path self = fs::read_symlink("/proc/self/exe", ec);
    if (!ec) cmd += " --compatbench " + shell_quote(self.string());
    const int status = std::system(cmd.c_str());
    if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        std::cerr << "compatbench report: " << cmd << " failed (does " << python
                  << " have h5py, numpy and matplotlib?)\n";
        return kExitBadInput;
    }
    return kExitOk;
}

}  // namespace compatbench
