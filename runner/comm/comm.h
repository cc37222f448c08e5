// The runner's one MPI layer (docs/architecture.md): a session that sets MPI up and takes it
// down, a communicator with the few collectives and messages the runner sends, and one way
// for ranks to agree on an error (agree) or to end the job on one rank's (abort). No other
// file calls MPI; the results file hands native() to HDF5's MPI-IO driver.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace compatbench::comm {

class Comm;

// MPI initialised (one thread calls MPI: MPI_THREAD_FUNNELED) for its lifetime.
class Session {
  public:
    Session();
    ~Session();
    Session(const Session&) = delete;
    Session& operator=(const Session&) = delete;
    Comm world() const;
};

// This process's rank as its launcher gives it before MPI starts (mpirun, srun or a PMI
// launcher's environment); 0 for a process started alone.
int launcher_rank();

// The errors MPI-IO met on this rank since the session began (a write refused by a quota or
// a full disk): how many, and the last as MPI's text. Any thread may ask. HDF5 may not return
// from the collective step it met one in (exec/stall_guard.h).
struct FileErrors {
    std::size_t count = 0;
    std::string last;
};
FileErrors file_errors();

// A communicator: MPI_COMM_WORLD, or MPI_COMM_SELF for one process alone (tests).
class Comm {
  public:
    explicit Comm(MPI_Comm native);
    int rank() const { return rank_; }
    int size() const { return size_; }
    MPI_Comm native() const { return native_; }

    void barrier() const;
    // A barrier that sleeps while it waits, so a waiting rank leaves its core to others.
    void idle_barrier() const;
    // root's value on every rank.
    template <class T>
    void broadcast(T& value, int root = 0) const {
        static_assert(std::is_trivially_copyable_v<T>);
        broadcast_bytes(&value, sizeof value, root);
    }
    void broadcast(std::string& text, int root = 0) const;
    // Element by element over the ranks, on root (reduce_*) or on every rank (all_*).
    void reduce_sum(std::span<double> values, int root = 0) const;
    void reduce_max(std::span<double> values, int root = 0) const;
    void all_sum(std::span<double> values) const;
    int all_min(int value) const;
    // Every rank's value, on root (empty elsewhere), and every rank's text on every rank.
    std::vector<double> gather(double value, int root = 0) const;
    std::vector<std::string> all_gather(const std::string& text) const;
    // Blocking messages of numbers; recv sizes `values` to what was sent.
    template <class T>
    void send(std::span<const T> values, int dest, int tag) const {
        send_bytes(values.data(), values.size_bytes(), dest, tag);
    }
    template <class T>
    void recv(std::vector<T>& values, int source, int tag) const {
        static_assert(std::is_trivially_copyable_v<T>);
        values.resize(probe_bytes(source, tag) / sizeof(T));
        recv_bytes(values.data(), values.size() * sizeof(T), source, tag);
    }
    // One byte message if any is waiting from `source` (any_source for all); false when none.
    static constexpr int any_source = MPI_ANY_SOURCE;
    bool try_receive(int source, int& from, int& tag, std::vector<std::uint8_t>& bytes) const;

    // The ranks that share this rank's memory (its node), and the node's name.
    Comm node() const;
    static std::string host();
    // Ends every rank of the job with `code` (the ranks' error->one).
    [[noreturn]] void abort(int code) const;

  private:
    void broadcast_bytes(void* data, std::size_t bytes, int root) const;
    void send_bytes(const void* data, std::size_t bytes, int dest, int tag) const;
    std::size_t probe_bytes(int source, int tag) const;
    void recv_bytes(void* data, std::size_t bytes, int source, int tag) const;
    MPI_Comm native_;
    int rank_ = 0, size_ = 1;
    struct Free {
        void operator()(MPI_Comm* c) const;
    };
    std::shared_ptr<MPI_Comm> owned_;  // a communicator this one made (node()), freed last
};

// Sends byte messages without blocking: keeps each buffer alive until MPI is done with it (a
// blocking send of a large message would deadlock two ranks that both send).
class Outbox {
  public:
    explicit Outbox(const Comm& comm) : comm_(comm.native()) {}
    ~Outbox();
    Outbox(const Outbox&) = delete;
    Outbox& operator=(const Outbox&) = delete;
    void send(int dest, int tag, std::vector<std::uint8_t> bytes);
    void progress();  // frees finished sends
    void drain();     // waits for every send to finish
    bool empty() const { return pending_.empty(); }

  private:
    struct Pending {
        MPI_Request request;
        std::vector<std::uint8_t> bytes;
    };
    MPI_Comm comm_;
    std::list<Pending> pending_;
};

// What the ranks that did not fail throw from agree: the lowest failing rank's message,
// prefixed "rank R: " when R is not 0.
class Failed : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

// Runs `work` on every rank (the ranks' error->all, as LAMMPS's): when it throws on any, the
// lowest failing rank throws its own exception again and every other rank throws Failed with
// that rank's message, so that no rank goes on to a collective call alone and rank 0 can say
// the error once.
void agree(const Comm& comm, const std::function<void()>& work);

}  // namespace compatbench::comm
