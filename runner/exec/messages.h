// The coordinator/worker protocol over MPI (tags and payloads) and a non-blocking outbox.
//
//   coordinator -> worker  kTagAssign   int64 pairs (task index, attempt)
//   coordinator -> worker  kTagStop     int32 0 = finish (nothing outstanding), 1 = abandon
//   worker -> coordinator  kTagResults  MessagePack {"final": bool, "r": [result...]}
//   worker -> coordinator  kTagSignal   int32 signal number a worker received
//
// Every rank builds the same task graph from the same config, so tasks travel as indices.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <list>
#include <vector>

#include "exec/executor.h"

namespace compatbench {

inline constexpr int kTagAssign = 11;
inline constexpr int kTagStop = 12;
inline constexpr int kTagResults = 13;
inline constexpr int kTagSignal = 14;

// Sends without blocking: keeps each buffer alive until MPI is done with it (a blocking
// send of a large message would deadlock two ranks that both send).
class Outbox {
  public:
    explicit Outbox(MPI_Comm comm) : comm_(comm) {}
    ~Outbox();
    void send(int dest, int tag, std::vector<std::uint8_t> bytes);
    void progress();  // frees finished sends
    void drain();     // waits for every send to finish

  private:
    struct Pending {
        MPI_Request request;
        std::vector<std::uint8_t> bytes;
    };
    MPI_Comm comm_;
    std::list<Pending> pending_;
};

std::vector<std::uint8_t> encode_assignments(const std::vector<Assignment>& batch);
std::vector<Assignment> decode_assignments(const std::vector<std::uint8_t>& bytes);
std::vector<std::uint8_t> encode_int(std::int32_t value);
std::int32_t decode_int(const std::vector<std::uint8_t>& bytes);

// Results carry outputs as JSON values checked against the group's columns on arrival.
std::vector<std::uint8_t> encode_results(const std::vector<Completion>& results, bool final,
                                         const TaskGraph& graph, const Config& config);
std::vector<Completion> decode_results(const std::vector<std::uint8_t>& bytes, bool& final,
                                       const TaskGraph& graph, const Config& config);

// Receives one message if any is waiting (non-blocking); false when none.
bool try_receive(MPI_Comm comm, int source, int& from, int& tag, std::vector<std::uint8_t>& bytes);

}  // namespace compatbench
