// The coordinator/worker protocol (tags and payloads), sent through comm/comm.h.
//
//   coordinator -> worker  kTagAssign   int64 pairs (task index, attempt)
//   coordinator -> worker  kTagStop     int32 0 = finish (nothing outstanding), 1 = abandon
//   worker -> coordinator  kTagResults  MessagePack {"final": bool, "r": [result...]}
//   worker -> coordinator  kTagSignal   int32 signal number a worker received
//   worker -> coordinator  kTagAbort    text: the error that ends the run on that worker
//
// Every rank builds the same task graph from the same config, so tasks travel as indices.
#pragma once

#include <stdexcept>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "comm/comm.h"
#include "exec/executor.h"

namespace compatbench {

inline constexpr int kTagAssign = 11;
inline constexpr int kTagStop = 12;
inline constexpr int kTagResults = 13;
inline constexpr int kTagSignal = 14;
inline constexpr int kTagAbort = 15;

std::vector<std::uint8_t> encode_assignments(const std::vector<Assignment>& batch);
std::vector<Assignment> decode_assignments(const std::vector<std::uint8_t>& bytes);
std::vector<std::uint8_t> encode_int(std::int32_t value);
std::int32_t decode_int(const std::vector<std::uint8_t>& bytes);

// Results carry outputs as JSON values checked against the group's columns on arrival.
std::vector<std::uint8_t> encode_results(const std::vector<Completion>& results, bool final,
                                         const TaskGraph& graph, const Config& config);
std::vector<Completion> decode_results(const std::vector<std::uint8_t>& bytes, bool& final,
                                       const TaskGraph& graph, const Config& config);

// A run alone (one rank) that cannot go on: thrown once its results file is closed; the
// verb prints it as abort_job does and ends with exit 3 (not an internal error), through
// MPI_Abort as abort_job: HDF5 may still hold the file whose close failed, and would touch
// it again in MPI_Finalize.
struct RunStopped : std::runtime_error {
    using std::runtime_error::runtime_error;
};
// The line abort_job prints: "compatbench: rank R: WHAT (the run stops; ...)".
std::string stop_line(int rank, const std::string& what);

// Ends the whole job (exit 3) on an error that may leave other ranks waiting in a collective
// call, after printing why on stderr and in the rank's log. A worker first tells the
// coordinator (kTagAbort), which ends the job from its loop: the job is then ended by the run's
// own error, not by a stop signal that mpirun passes to the coordinator when a worker aborts
// (status would take that for a user's signal). A coordinator busy elsewhere (a collective
// write) does not answer; the worker then ends the job itself after `grace`.
[[noreturn]] void abort_job(const comm::Comm& comm, const std::string& what,
                            std::chrono::milliseconds grace = std::chrono::seconds(2));

}  // namespace compatbench
