#include "formats/staged_folder.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <system_error>

#include "formats/safetensors.h"

namespace compatbench::formats {

namespace fs = std::filesystem;

namespace {

// `p` with symlinks resolved as far as it exists, the rest as written.
fs::path resolved(const fs::path& p) {
    std::error_code ec;
    const fs::path r = fs::weakly_canonical(fs::absolute(p), ec);
    return ec ? fs::absolute(p).lexically_normal() : r;
}

// Whether `inner` is `outer` or lies below it.
bool within(const fs::path& inner, const fs::path& outer) {
    auto i = inner.begin();
    for (auto o = outer.begin(); o != outer.end(); ++o, ++i) {
        if (o->empty()) continue;  // a trailing separator
        if (i == inner.end() || *i != *o) return false;
    }
    return true;
}

}  // namespace

void check_output_clear_of_inputs(const fs::path& out, const std::vector<fs::path>& inputs,
                                  const std::string& what) {
    const fs::path o = resolved(out);
    for (const auto& input : inputs) {
        const fs::path in = resolved(input);
        const char* how = o == in         ? "is the input"
                          : within(in, o) ? "contains the input"
                          : within(o, in) ? "lies inside the input"
                                          : nullptr;
        if (how)
            throw FormatError(what + " " + out.string() + " " + how + " " + input.string() +
                              ": inputs are never written over; choose another folder");
    }
}

fs::path StagedFolder::staging_path(const fs::path& target) {
    const fs::path t = fs::absolute(target).lexically_normal();
    const fs::path name = t.has_filename() ? t.filename() : t.parent_path().filename();
    const fs::path parent = t.has_filename() ? t.parent_path() : t.parent_path().parent_path();
    std::string staged = ".";  // (appended, not `"." + s`: GCC 12's -Wrestrict misfires)
    staged += name.string();
    staged += ".partial";
    return parent / staged;
}

fs::path StagedFolder::old_path(const fs::path& target) {
    fs::path old = staging_path(target);
    return old.replace_filename(old.filename().string() + ".old");
}

fs::path StagedFolder::lock_path(const fs::path& target) {
    return staging_path(target).replace_extension(".lock");  // .<name>.lock
}

void StagedFolder::check_clear_of_inputs(const fs::path& target,
                                         const std::vector<fs::path>& inputs,
                                         const std::string& what) {
    check_output_clear_of_inputs(target, inputs, what);
    check_output_clear_of_inputs(staging_path(target), inputs, "its staging folder");
    check_output_clear_of_inputs(old_path(target), inputs, "the folder it moves an old one to");
    check_output_clear_of_inputs(lock_path(target), inputs, "its lock file");
}

StagedFolder::StagedFolder(fs::path target, bool replace)
    : target_(std::move(target)), staging_(staging_path(target_)), replace_(replace) {
    std::error_code ec;
    if (fs::exists(fs::symlink_status(target_, ec)) && !replace_)
        throw FormatError(target_.string() +
                          ": the output folder exists; pass --replace to replace it whole, "
                          "or choose another folder");
    if (fs::exists(target_) && !fs::is_directory(target_))
        throw FormatError(target_.string() + ": exists and is not a folder");
    lock_path_ = lock_path(target_);
    lock_ = ::open(lock_path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (lock_ < 0)
        throw FormatError(lock_path_.string() + ": cannot create the lock file (" +
                          std::strerror(errno) + ")");
    try {
        if (::flock(lock_, LOCK_EX | LOCK_NB) != 0)
            throw FormatError(target_.string() + ": another writer is writing it (" +
                              lock_path_.string() + " is locked)");
        fs::remove_all(staging_);  // a killed writer's leftovers
        fs::create_directories(staging_);
    } catch (...) {
        ::close(lock_);  // the lock file stays: it may be the other writer's
        throw;
    }
}

StagedFolder::~StagedFolder() {
    std::error_code ec;
    if (!committed_) fs::remove_all(staging_, ec);
    if (lock_ >= 0) {
        fs::remove(lock_path_, ec);
        ::close(lock_);
    }
}

void StagedFolder::commit() {
    std::error_code ec;
    fs::path old;
    if (fs::exists(fs::symlink_status(target_, ec))) {
        if (!replace_) throw FormatError(target_.string() + ": appeared while writing; kept");
        old = old_path(target_);
        fs::remove_all(old);
        fs::rename(target_, old);
    }
    fs::rename(staging_, target_);
    committed_ = true;
    if (!old.empty()) fs::remove_all(old, ec);
}

}  // namespace compatbench::formats
