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
    // "" once locked (this process's pid is written into the file); otherwise why not.
    // Waits up to `wait_seconds` for another holder to go away.
    std::string acquire(const std::string& out, double wait_seconds);

  private:
    int fd_ = -1;
};

// Whether a live run holds <out>/.lock (without taking it for more than an instant).
bool folder_locked(const std::string& out);

}  // namespace compatbench
