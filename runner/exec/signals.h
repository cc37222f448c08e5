// Stop signals. SIGTERM, SIGUSR1 (a SLURM time limit or preemption) and SIGINT ask the run
// to stop: dispatching ends, the ledger is flushed, results.h5 is closed and the process
// exits with kExitRequeue. A second such signal exits at once with kExitHardStop; the
// ledger stays readable (whole lines; a torn last line is cut on resume).
#pragma once

namespace compatbench {

inline constexpr int kExitOk = 0;
inline constexpr int kExitTasksFailed = 1;   // some tasks failed (or were skipped behind them)
inline constexpr int kExitBadInput = 2;      // bad config, bad arguments or bad input files
inline constexpr int kExitInternal = 3;      // an unexpected error in the runner itself
inline constexpr int kExitRequeue = 75;      // stopped by a signal: resume with --resume
inline constexpr int kExitHardStop = 76;     // a second signal: stopped at once; --resume
inline constexpr int kExitStillRunning = 4;  // `status --exit-code`: the run goes on

// Installs the handlers in the calling thread's process (call before starting threads,
// which then inherit the mask that keeps signals on the main thread).
void install_stop_signals();
// 0, or the first stop signal received.
int stop_signal();
// Blocks the stop signals in the calling thread (task threads), so the main thread takes them.
void block_stop_signals_in_this_thread();

}  // namespace compatbench
