// <out>/.lock: an exclusive flock held for the whole run, so that two runs never write one
// ledger (a killed job's ranks may outlive its launcher for a moment; a requeued job then
// waits). `compatbench status` asks whether a run holds it.
#pragma once

#include <string>

namespace compatbench {

class FolderLock {
  public:
    FolderLock() = default;
    FolderLock(const FolderLock&) = delete;
    FolderLock& operator=(const FolderLock&) = delete;
    ~FolderLock();
    // "" once locked; otherwise why not. Waits up to `wait_seconds` for another holder to
    // go away. The file is not written: a run refused after it leaves it as it was.
    std::string acquire(const std::string& out, double wait_seconds);
    // Writes this process's pid into the held lock file (a run that goes ahead).
    void claim() const;

  private:
    int fd_ = -1;
};

// Whether a live run holds <out>/.lock (without taking it for more than an instant).
bool folder_locked(const std::string& out);

}  // namespace compatbench
