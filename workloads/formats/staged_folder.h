// An output folder that appears whole or not at all, and never over an input.
//
// A merge (or any writer of a model folder) writes into a staging folder beside its target,
// `.<name>.partial`, and renames it into place only when everything is written: a failed or
// killed writer leaves no partial model at the target (the next attempt clears the stale
// staging folder). A lock file beside the target, `.<name>.lock` (flock), keeps a second
// writer of the same target out while the first writes. An existing target is replaced whole only
// when asked, and is moved aside only once its replacement is complete.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace compatbench::formats {

// Refuses (FormatError naming both paths) an output that is one of `inputs`, contains one, or
// lies inside one, symlinks resolved (the parts of `out` that do not exist yet are taken
// as written). `what` names the output in the message ("--out").
void check_output_clear_of_inputs(const std::filesystem::path& out,
                                  const std::vector<std::filesystem::path>& inputs,
                                  const std::string& what);

class StagedFolder {
  public:
    // Refuses an existing `target` unless `replace`, and a target another writer holds. The
    // staging folder is created empty.
    StagedFolder(std::filesystem::path target, bool replace);
    StagedFolder(const StagedFolder&) = delete;
    StagedFolder& operator=(const StagedFolder&) = delete;
    ~StagedFolder();  // removes the staging folder unless committed

    const std::filesystem::path& path() const { return staging_; }
    const std::filesystem::path& target() const { return target_; }
    // Moves the staging folder into place (replacing the old target whole, if any).
    void commit();

    // The staging folder's path for `target`, where an old target is moved while its
    // replacement takes its place, and the lock file's.
    static std::filesystem::path staging_path(const std::filesystem::path& target);
    static std::filesystem::path old_path(const std::filesystem::path& target);
    static std::filesystem::path lock_path(const std::filesystem::path& target);
    // check_output_clear_of_inputs for `target` and every path a StagedFolder for it
    // creates, renames or removes (`what` names the target: "--out").
    static void check_clear_of_inputs(const std::filesystem::path& target,
                                      const std::vector<std::filesystem::path>& inputs,
                                      const std::string& what);

  private:
    std::filesystem::path target_, staging_, lock_path_;
    int lock_ = -1;
    bool replace_ = false, committed_ = false;
};

}  // namespace compatbench::formats
