#include "app/mpi_verb.h"

#include <mpi.h>

#include <algorithm>
#include <iostream>
#include <numeric>
#include <stdexcept>
#include <string>

#include "config/yaml_check.h"
#include "exec/signals.h"

namespace compatbench {

int with_mpi(const char* verb, const std::function<int(int rank, int size)>& body) {
    int provided = 0;
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int code = kExitOk;
    try {
        code = body(rank, size);
    } catch (const ConfigError& e) {
        if (rank == 0) std::cerr << "compatbench: " << e.what() << "\n";
        code = kExitBadInput;
    } catch (const std::exception& e) {
        if (rank == 0) std::cerr << "compatbench: " << verb << ": " << e.what() << "\n";
        code = kExitBadInput;
    }
    MPI_Finalize();
    return code;
}

void on_every_rank(const std::function<void()>& work) {
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    std::string why;
    try {
        work();
    } catch (const std::exception& e) {
        why = e.what();
        if (why.empty()) why = "failed";
    }
    const int mine = why.empty() ? size : rank;
    int first = size;
    MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (first == size) return;
    int length = static_cast<int>(why.size());
    MPI_Bcast(&length, 1, MPI_INT, first, MPI_COMM_WORLD);
    why.resize(static_cast<std::size_t>(length));
    MPI_Bcast(why.data(), length, MPI_CHAR, first, MPI_COMM_WORLD);
    throw std::runtime_error(why);
}

std::vector<int> assign_ranks(const std::vector<std::uint64_t>& sizes, int ranks) {
    std::vector<std::size_t> order(sizes.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return sizes[a] > sizes[b]; });
    std::vector<std::uint64_t> load(static_cast<std::size_t>(ranks), 0);
    std::vector<int> owner(sizes.size(), 0);
    for (std::size_t i : order) {
        const auto r =
            static_cast<std::size_t>(std::min_element(load.begin(), load.end()) - load.begin());
        owner[i] = static_cast<int>(r);
        load[r] += sizes[i];
    }
    return owner;
}

}  // namespace compatbench
