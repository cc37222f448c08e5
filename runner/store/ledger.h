// ledger.jsonl: the record of truth of a run. One JSON line per finished task attempt
// (done or failed), appended by the coordinator only, written at once (a killed process
// loses nothing it wrote) and fsynced in groups (at most `fsync_interval` apart).
//
//   {"id":"work/3","kind":"sleep","config_hash":"…","status":"done","attempt":1,"rank":1,
//    "seed":…,"start":…,"duration":…,"outputs":{"slept":0.01,"value":0.42},"error":""}
#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

namespace compatbench {

// A record's field, or `fallback` when it is missing or of another type (a hand-edited or
// foreign line must not stop a resume or `status`).
template <class T>
T record_field(const nlohmann::json& record, const char* key, T fallback) {
    const auto it = record.find(key);
    if (it == record.end()) return fallback;
    if constexpr (std::is_same_v<T, std::string>) {
        return it->is_string() ? it->template get<std::string>() : fallback;
    } else if constexpr (std::is_floating_point_v<T>) {
        return it->is_number() ? it->template get<T>() : fallback;
    } else {
        return it->is_number_integer() ? it->template get<T>() : fallback;
    }
}

class Ledger {
  public:
    // Opens `path` for appending (creating it); a torn last line left by a killed run is
    // cut off first, and `warn` is told.
    Ledger(std::string path, double fsync_interval,
           const std::function<void(const std::string&)>& warn);
    ~Ledger();
    Ledger(const Ledger&) = delete;
    Ledger& operator=(const Ledger&) = delete;

    void append(const nlohmann::json& record);  // written by the next write_pending()
    void write_pending();                       // one write() of what is buffered
    void sync_if_due();                         // fsync when the group-commit window passed
    void sync();                                // write and fsync now
    const std::string& path() const { return path_; }

    // Every well-formed record of `path` in order; malformed lines are reported to `warn`
    // (file:line and why) and skipped. A missing file gives no records.
    static std::vector<nlohmann::json> read(const std::string& path,
                                            const std::function<void(const std::string&)>& warn);

  private:
    std::string path_;
    int fd_ = -1;
    std::string buffer_;
    bool unsynced_ = false;
    std::chrono::steady_clock::duration window_;
    std::chrono::steady_clock::time_point last_sync_;
};

}  // namespace compatbench
