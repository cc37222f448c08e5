#include "exec/signals.h"

#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <csignal>

namespace compatbench {

namespace {
std::atomic<int> g_signal{0};
std::atomic<int> g_count{0};

extern "C" void on_stop_signal(int sig) {
    if (g_count.fetch_add(1) >= 1) _exit(kExitHardStop);
    int expected = 0;
    g_signal.compare_exchange_strong(expected, sig);
}

sigset_t stop_set() {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGUSR1);
    sigaddset(&set, SIGINT);
    return set;
}
}  // namespace

void install_stop_signals() {
    struct sigaction sa {};
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    for (int sig : {SIGTERM, SIGUSR1, SIGINT}) sigaction(sig, &sa, nullptr);
}

int stop_signal() { return g_signal.load(); }

void block_stop_signals_in_this_thread() {
    const sigset_t set = stop_set();
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

}  // namespace compatbench
