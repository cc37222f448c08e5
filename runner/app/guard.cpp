// `compatbench-guard`: the guard of a command task; what it does is in core/guard.h.
//
// It talks to the kernel alone. A C library's start-up reads the CPU's cache descriptors
// with `cpuid`, and on a virtual machine each `cpuid` traps to the hypervisor: a static
// glibc program that does nothing takes about 0.6 ms to start there, one written against
// the kernel 0.07 ms (bench/README.md, "Command tasks"). On x86-64 and AArch64 the program
// is therefore its own entry point and makes its system calls itself; elsewhere it is an
// ordinary program that calls the C library's syscall(). Every call returns -errno on error.
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

#if !defined(__x86_64__) && !defined(__aarch64__)
#include <unistd.h>
#endif

namespace {

// --- the system calls --------------------------------------------------------------------

long sys(long n, long a = 0, long b = 0, long c = 0, long d = 0, long e = 0) {
#if defined(__x86_64__)
    long ret;
    register long r10 __asm__("r10") = d;
    register long r8 __asm__("r8") = e;
    __asm__ volatile("syscall"
                     : "=a"(ret)
                     : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8)
                     : "rcx", "r11", "memory");
    return ret;
#elif defined(__aarch64__)
    register long x8 __asm__("x8") = n;
    register long x0 __asm__("x0") = a;
    register long x1 __asm__("x1") = b;
    register long x2 __asm__("x2") = c;
    register long x3 __asm__("x3") = d;
    register long x4 __asm__("x4") = e;
    __asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4) : "memory");
    return x0;
#else
    const long r = syscall(n, a, b, c, d, e);
    return r < 0 ? -errno : r;
#endif
}

template <class T>
long arg(T* p) {
    return reinterpret_cast<long>(p);
}

using Mask = unsigned long;  // the kernel's signal set: bit s-1 for signal s
constexpr Mask bit(int sig) { return Mask{1} << (sig - 1); }

[[noreturn]] void leave(int code) {
    sys(SYS_exit_group, code);
    __builtin_unreachable();
}

void set_mask(int how, Mask mask) { sys(SYS_rt_sigprocmask, how, arg(&mask), 0, sizeof mask); }

// SIG_DFL or SIG_IGN for `sig` (the kernel's struct sigaction on both machines).
void set_disposition(int sig, bool ignore) {
    struct {
        long handler, flags, restorer;
        Mask mask;
    } act{ignore ? 1L : 0L, 0, 0, 0};
    sys(SYS_rt_sigaction, sig, arg(&act), 0, sizeof(Mask));
}

long now_ms() {
    timespec t{};
    sys(SYS_clock_gettime, CLOCK_MONOTONIC, arg(&t));
    return t.tv_sec * 1000L + t.tv_nsec / 1000000L;
}

void pause_ms(long ms) {
    const timespec t{ms / 1000, (ms % 1000) * 1000000L};
    sys(SYS_nanosleep, arg(&t), 0);
}

// One line on stderr, "compatbench-guard: " and the parts.
void say(const char* a, const char* b = "", const char* c = "", const char* d = "") {
    char line[512];
    long n = 0;
    const char* const parts[] = {"compatbench-guard: ", a, b, c, d, "\n"};
    for (const char* part : parts)
        for (const char* p = part; *p && n < static_cast<long>(sizeof line); ++p) line[n++] = *p;
    sys(SYS_write, 2, arg(line), n);
}

const char* error_text(long err) {
    switch (err) {
        case ENOENT:
            return "No such file or directory";
        case EACCES:
            return "Permission denied";
        case ENOEXEC:
            return "Exec format error";
        case ENOTDIR:
            return "Not a directory";
        case E2BIG:
            return "Argument list too long";
        case ENOMEM:
            return "Cannot allocate memory";
        case ETXTBSY:
            return "Text file busy";
        default:
            return "error from execve";
    }
}

// A non-negative decimal number, or -1.
long number(const char* s) {
    long v = 0;
    if (!*s) return -1;
    for (; *s; ++s) {
        if (*s < '0' || *s > '9') return -1;
        v = v * 10 + (*s - '0');
    }
    return v;
}

// --- the guard ---------------------------------------------------------------------------

// Signals to the group are for the program; the guard ignores them and follows its fate.
constexpr int kIgnored[] = {SIGTERM, SIGINT, SIGUSR1};
// What the program gets back at its default: those, and what the rank handles.
constexpr int kReset[] = {SIGTERM, SIGINT, SIGUSR1, SIGUSR2, SIGPIPE, SIGCHLD};

// Ends the guard as the program it ran ended: the same exit code, or the same signal.
[[noreturn]] void end_as(int status) {
    if (WIFEXITED(status)) leave(WEXITSTATUS(status));
    const int sig = WTERMSIG(status);
    const rlimit no_core{0, 0};  // the program's own core, if any, is written already
    sys(SYS_prlimit64, 0, RLIMIT_CORE, arg(&no_core), 0);
    set_disposition(sig, false);
    set_mask(SIG_UNBLOCK, bit(sig));
    sys(SYS_kill, sys(SYS_getpid), sig);
    leave(128 + sig);
}

// The guard's children now (the program, and as its subreaper the program's orphans), at
// most `cap` of them: the rest are found on the next call.
long guard_children(long* out, long cap) {
    static char text[65536];
    const long fd = sys(SYS_openat, AT_FDCWD, arg("/proc/thread-self/children"), O_RDONLY);
    if (fd < 0) return 0;
    long size = 0;
    for (long n; size < static_cast<long>(sizeof text) - 1 &&
                 (n = sys(SYS_read, fd, arg(text + size), sizeof text - 1 - size)) > 0;)
        size += n;
    sys(SYS_close, fd);
    text[size] = '\0';
    long count = 0;
    for (const char* p = text; *p && count < cap;) {
        while (*p == ' ' || *p == '\n') ++p;
        if (*p < '0' || *p > '9') break;
        long pid = 0;
        for (; *p >= '0' && *p <= '9'; ++p) pid = pid * 10 + (*p - '0');
        out[count++] = pid;
    }
    return count;
}

bool contains(const long* v, long n, long p) {
    for (long i = 0; i < n; ++i)
        if (v[i] == p) return true;
    return false;
}

void reap_all() {
    while (sys(SYS_wait4, -1, 0, WNOHANG, 0) > 0) {
    }
}

// Ends every descendant the program left, in its group or not: SIGTERM to the group and once
// to each of the guard's children (and the group it leads), SIGKILL after `kill_after_ms`,
// until none is left (the orphans of those it ends reach the guard in turn) or a grace
// period after the SIGKILLs (a process that cannot be signalled or is stuck in the kernel
// does not hold the guard for good).
void end_descendants(long kill_after_ms, long grace_ms) {
    static long left[4096], termed[4096];
    long n_termed = 0;
    sys(SYS_kill, 0, SIGTERM);  // the guard ignores it
    const long kill_at = now_ms() + kill_after_ms, give_up = kill_at + grace_ms;
    while (now_ms() < give_up) {
        reap_all();
        const long n_left = guard_children(left, 4096);
        // None listed, and none at all (a kernel without /proc/.../children lists none).
        if (n_left == 0 && sys(SYS_wait4, -1, 0, WNOHANG | __WALL, 0) == -ECHILD) return;
        const bool late = now_ms() >= kill_at;
        for (long i = 0; i < n_left; ++i) {
            const long p = left[i];
            if (!late && contains(termed, n_termed, p)) continue;
            if (!late && n_termed < 4096) termed[n_termed++] = p;
            const int sig = late ? SIGKILL : SIGTERM;
            sys(SYS_kill, p, sig);
            sys(SYS_kill, -p, sig);  // a daemon in a session of its own leads its group
        }
        pause_ms(20);
    }
}

// The rank that started the group is gone, or asks for the end (a timeout, an abandoned
// task, a server past its time): every descendant, kept background or not, gets SIGTERM and
// SIGKILL after the grace period; then what is left of the group, the guard with it.
[[noreturn]] void end_everything(long grace_ms) {
    end_descendants(grace_ms, grace_ms);
    sys(SYS_kill, 0, SIGKILL);
    leave(128 + SIGKILL);
}

// Starts the program with an empty signal mask and the signals the guard or the rank
// handle back at their defaults. A program that cannot be started exits 127, as a shell's.
long start(char** argv, char** envp) {
    const long child = sys(SYS_clone, SIGCHLD, 0, 0, 0, 0);  // fork(): both machines' order
    if (child != 0) return child;
    for (int sig : kReset) set_disposition(sig, false);
    set_mask(SIG_SETMASK, 0);
    const long err = sys(SYS_execve, arg(argv[0]), arg(argv), arg(envp));
    say("cannot start ", argv[0], ": ", error_text(-err));
    leave(127);
}

// Waits for the program (or the rank's death) and ends as described in core/guard.h.
[[noreturn]] void watch(long child, long grace_ms, bool keep_background) {
    const Mask waited = bit(SIGCHLD) | bit(SIGUSR2);
    while (true) {
        char info[128];
        const long sig = sys(SYS_rt_sigtimedwait, arg(&waited), arg(info), 0, sizeof waited);
        if (sig == SIGUSR2) end_everything(grace_ms);
        int status = 0;  // the program's; orphans reaped as the subreaper are not waited for
        for (long r; sig == SIGCHLD && (r = sys(SYS_wait4, -1, arg(&status), WNOHANG, 0)) > 0;) {
            if (r != child) continue;
            if (!keep_background) end_descendants(grace_ms / 2, grace_ms);
            end_as(status);
        }
    }
}

int run(int argc, char** argv, char** envp) {
    // It ends its whole group: only ever as the leader of a group of its own.
    if (argc < 5 || sys(SYS_getpgid, 0) != sys(SYS_getpid)) {
        say("internal use only: started by compatbench for a command task");
        return 2;
    }
    const long parent = number(argv[1]), grace_ms = number(argv[2]);
    if (parent <= 0 || grace_ms < 0) {
        say("internal use only: started by compatbench for a command task");
        return 2;
    }
    for (int sig : kIgnored) set_disposition(sig, true);
    set_mask(SIG_BLOCK, bit(SIGCHLD) | bit(SIGUSR2));
    sys(SYS_prctl, PR_SET_PDEATHSIG, SIGUSR2);
    if (sys(SYS_getppid) != parent) leave(128 + SIGKILL);  // died before prctl: nothing started
    const bool keep_background = argv[3][0] == '1' && argv[3][1] == '\0';
    // The subreaper even with keep_background: a timeout still finds a kept daemon that left
    // the group; one kept past a normal end passes to init when the guard ends.
    sys(SYS_prctl, PR_SET_CHILD_SUBREAPER, 1);
    const long child = start(argv + 4, envp);
    if (child < 0) {
        say("cannot start ", argv[4], ": no process could be made");
        return 127;
    }
    watch(child, grace_ms, keep_background);
}

}  // namespace

#if defined(__x86_64__) || defined(__aarch64__)
// The entry point: the stack holds argc, argv..., 0, envp..., 0.
extern "C" [[noreturn, gnu::used]] void guard_entry(long* sp) {
    const int argc = static_cast<int>(sp[0]);
    char** argv = reinterpret_cast<char**>(sp + 1);
    leave(run(argc, argv, argv + argc + 1));
}
#if defined(__x86_64__)
__asm__(
    ".text\n.global _start\n_start:\n xor %ebp, %ebp\n mov %rsp, %rdi\n"
    " and $-16, %rsp\n call guard_entry\n hlt\n");
#else
__asm__(
    ".text\n.global _start\n_start:\n mov x29, #0\n mov x30, #0\n mov x0, sp\n"
    " bl guard_entry\n brk #0\n");
#endif
// What the compiler may call for a copy or a fill.
extern "C" void* memset(void* d, int c, unsigned long n) {
    auto* p = static_cast<volatile unsigned char*>(d);
    for (unsigned long i = 0; i < n; ++i) p[i] = static_cast<unsigned char>(c);
    return d;
}
extern "C" void* memcpy(void* d, const void* s, unsigned long n) {
    auto* p = static_cast<volatile unsigned char*>(d);
    const auto* q = static_cast<const unsigned char*>(s);
    for (unsigned long i = 0; i < n; ++i) p[i] = q[i];
    return d;
}
#else
int main(int argc, char** argv, char** envp) { return run(argc, argv, envp); }
#endif
