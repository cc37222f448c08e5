// The MPI layer (runner/comm/comm.h) on 3 ranks (ctest mpi.comm): how ranks agree on an
// error, and the collectives and messages the runner sends. Each rank checks what it got;
// rank 0 prints every failed check and the process exits 1 on any rank's.
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "comm/comm.h"

using compatbench::comm::Comm;

namespace {

struct Checks {
    const Comm& comm;
    std::vector<std::string> failed;
    void expect(bool ok, const std::string& what) {
        if (!ok) failed.push_back("rank " + std::to_string(comm.rank()) + ": " + what);
    }
};

// agree: nothing thrown anywhere passes; when ranks 1 and 2 fail, rank 1 (the lowest) throws
// its own exception again, and ranks 0 and 2 throw Failed with "rank 1: " and its message.
void check_agree(Checks& c) {
    const int rank = c.comm.rank();
    int ran = 0;
    compatbench::comm::agree(c.comm, [&] { ++ran; });
    c.expect(ran == 1, "agree without an error runs the work once");
    std::string got = "nothing";
    try {
        compatbench::comm::agree(c.comm, [&] {
            if (rank == 1) throw std::out_of_range("one failed");
            if (rank == 2) throw std::invalid_argument("two failed");
        });
    } catch (const compatbench::comm::Failed& e) {
        got = std::string("Failed: ") + e.what();
    } catch (const std::out_of_range& e) {
        got = std::string("out_of_range: ") + e.what();
    } catch (const std::exception& e) {
        got = std::string("other: ") + e.what();
    }
    const std::string want = rank == 1 ? "out_of_range: one failed" : "Failed: rank 1: one failed";
    c.expect(got == want, "agree: got '" + got + "', want '" + want + "'");
}

void check_collectives(Checks& c) {
    const int rank = c.comm.rank(), size = c.comm.size();
    std::string text = rank == 2 ? "from rank 2" : "";
    c.comm.broadcast(text, 2);
    c.expect(text == "from rank 2", "broadcast of a string from rank 2");
    long number = rank == 0 ? 42 : 0;
    c.comm.broadcast(number);
    c.expect(number == 42, "broadcast of a number");
    double values[2] = {1.0 + rank, -1.0 * rank};
    c.comm.reduce_sum(values);
    if (rank == 0) c.expect(values[0] == 6.0 && values[1] == -3.0, "reduce_sum on rank 0");
    double peak[1] = {static_cast<double>(rank)};
    c.comm.reduce_max(peak);
    if (rank == 0) c.expect(peak[0] == size - 1.0, "reduce_max on rank 0");
    double all[1] = {1.0};
    c.comm.all_sum(all);
    c.expect(all[0] == size, "all_sum on every rank");
    c.expect(c.comm.all_min(10 - rank) == 10 - (size - 1), "all_min");
    const auto gathered = c.comm.gather(rank * 10.0);
    if (rank == 0) c.expect(gathered == std::vector<double>{0.0, 10.0, 20.0}, "gather on rank 0");
    if (rank != 0) c.expect(gathered.empty(), "gather elsewhere is empty");
    const auto texts = c.comm.all_gather(std::string(static_cast<std::size_t>(rank), 'x'));
    c.expect(texts == std::vector<std::string>{"", "x", "xx"}, "all_gather of texts");
    const Comm node = c.comm.node();
    c.expect(node.size() == size, "one node holds the 3 ranks");
}

void check_messages(Checks& c) {
    const int rank = c.comm.rank();
    if (rank == 1) {
        const std::vector<std::int32_t> sent = {7, -8, 9};
        c.comm.send(std::span<const std::int32_t>(sent), 0, 5);
    } else if (rank == 0) {
        std::vector<std::int32_t> got;
        c.comm.recv(got, 1, 5);
        c.expect(got == std::vector<std::int32_t>{7, -8, 9}, "send and recv of numbers");
    }
    if (rank == 2) {
        compatbench::comm::Outbox outbox(c.comm);
        outbox.send(0, 6, {'h', 'i'});
        outbox.drain();
    } else if (rank == 0) {
        int from = -1, tag = -1;
        std::vector<std::uint8_t> bytes;
        while (!c.comm.try_receive(Comm::any_source, from, tag, bytes)) {
        }
        c.expect(from == 2 && tag == 6 && bytes == std::vector<std::uint8_t>{'h', 'i'},
                 "an outbox message received without blocking");
    }
    c.comm.barrier();
}

}  // namespace

int main() {
    const compatbench::comm::Session session;
    const Comm world = session.world();
    Checks c{world, {}};
    if (world.size() != 3) {
        if (world.rank() == 0) std::fprintf(stderr, "comm_check: run on 3 ranks\n");
        return 1;
    }
    check_agree(c);
    check_collectives(c);
    check_messages(c);
    std::string report;
    for (const auto& f : c.failed) report += f + "\n";
    const auto reports = world.all_gather(report);
    const int ok = world.all_min(c.failed.empty() ? 1 : 0);
    if (world.rank() == 0) {
        for (const auto& r : reports) std::fputs(r.c_str(), stderr);
        std::printf("comm: %s\n", ok ? "every check passed on 3 ranks" : "FAILED");
    }
    return ok ? 0 : 1;
}
