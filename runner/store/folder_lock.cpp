#include "store/folder_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <thread>

namespace compatbench {

FolderLock::~FolderLock() {
    if (fd_ >= 0) ::close(fd_);  // releases the lock
}

std::string FolderLock::acquire(const std::string& out, double wait_seconds) {
    const std::string path = (std::filesystem::path(out) / ".lock").string();
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) return path + ": cannot open the run lock";
    const auto until = std::chrono::steady_clock::now() +
                       std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                           std::chrono::duration<double>(wait_seconds));
    bool told = false;
    while (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
        if (std::chrono::steady_clock::now() >= until)
            return path + ": another compatbench run is using this output folder";
        if (!told) {
            std::cerr << "compatbench: " << path
                      << ": another run holds the folder; waiting for it to end\n";
            told = true;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    return {};
}

void FolderLock::claim() const {
    const std::string pid = std::to_string(::getpid()) + "\n";
    if (fd_ >= 0 && ::ftruncate(fd_, 0) == 0 && ::pwrite(fd_, pid.data(), pid.size(), 0) < 0) {
        // the pid is informative only
    }
}

bool folder_locked(const std::string& out) {
    const std::string path = (std::filesystem::path(out) / ".lock").string();
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    const bool held = ::flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
    ::close(fd);  // a shared lock taken here is released at once
    return held;
}

}  // namespace compatbench
