#include "comm/comm.h"

#include <chrono>
#include <cstdlib>
#include <exception>
#include <limits>
#include <mutex>
#include <thread>

namespace compatbench::comm {

namespace {
int count_of(std::size_t bytes) {
    if (bytes > static_cast<std::size_t>(std::numeric_limits<int>::max()))
        throw std::length_error("an MPI message of " + std::to_string(bytes) +
                                " bytes (at most 2^31 - 1)");
    return static_cast<int>(bytes);
}
std::mutex file_error_mutex;
FileErrors file_error_log;

// Every file's error handler (set as the default of files opened after the session began):
// MPI-IO calls it as the error happens, then returns the error as MPI_ERRORS_RETURN would.
void note_file_error(MPI_File*, int* code, ...) {
    char text[MPI_MAX_ERROR_STRING] = {};
    int length = 0;
    if (MPI_Error_string(*code, text, &length) != MPI_SUCCESS) length = 0;
    const std::lock_guard<std::mutex> lock(file_error_mutex);
    ++file_error_log.count;
    file_error_log.last = length > 0 ? std::string(text, static_cast<std::size_t>(length))
                                     : std::string("an MPI-IO error");
}
}  // namespace

int launcher_rank() {
    for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"})
        if (const char* v = std::getenv(name); v != nullptr && *v != '\0') return std::atoi(v);
    return 0;
}

FileErrors file_errors() {
    const std::lock_guard<std::mutex> lock(file_error_mutex);
    return file_error_log;
}

Session::Session() {
    int provided = 0;
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
    MPI_Errhandler handler = MPI_ERRHANDLER_NULL;
    if (MPI_File_create_errhandler(note_file_error, &handler) == MPI_SUCCESS) {
        MPI_File_set_errhandler(MPI_FILE_NULL, handler);
        MPI_Errhandler_free(&handler);  // the default keeps its own reference
    }
}

Session::~Session() { MPI_Finalize(); }

Comm Session::world() const { return Comm(MPI_COMM_WORLD); }

Comm::Comm(MPI_Comm native) : native_(native) {
    MPI_Comm_rank(native_, &rank_);
    MPI_Comm_size(native_, &size_);
}

void Comm::Free::operator()(MPI_Comm* c) const {
    MPI_Comm_free(c);
    delete c;
}

void Comm::barrier() const { MPI_Barrier(native_); }

void Comm::idle_barrier() const {
    MPI_Request request;
    MPI_Ibarrier(native_, &request);
    int done = 0;
    while (!done) {
        MPI_Test(&request, &done, MPI_STATUS_IGNORE);
        if (!done) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
}

void Comm::broadcast_bytes(void* data, std::size_t bytes, int root) const {
    MPI_Bcast(data, count_of(bytes), MPI_BYTE, root, native_);
}

void Comm::broadcast(std::string& text, int root) const {
    unsigned long long size = text.size();
    broadcast(size, root);
    text.resize(size);
    broadcast_bytes(text.data(), size, root);
}

void Comm::reduce_sum(std::span<double> values, int root) const {
    const void* in = rank_ == root ? MPI_IN_PLACE : values.data();
    MPI_Reduce(in, values.data(), count_of(values.size()), MPI_DOUBLE, MPI_SUM, root, native_);
}

void Comm::reduce_max(std::span<double> values, int root) const {
    const void* in = rank_ == root ? MPI_IN_PLACE : values.data();
    MPI_Reduce(in, values.data(), count_of(values.size()), MPI_DOUBLE, MPI_MAX, root, native_);
}

void Comm::all_sum(std::span<double> values) const {
    MPI_Allreduce(MPI_IN_PLACE, values.data(), count_of(values.size()), MPI_DOUBLE, MPI_SUM,
                  native_);
}

int Comm::all_min(int value) const {
    int out = value;
    MPI_Allreduce(&value, &out, 1, MPI_INT, MPI_MIN, native_);
    return out;
}

std::vector<double> Comm::gather(double value, int root) const {
    std::vector<double> all(rank_ == root ? static_cast<std::size_t>(size_) : 0);
    MPI_Gather(&value, 1, MPI_DOUBLE, all.data(), 1, MPI_DOUBLE, root, native_);
    return all;
}

std::vector<std::string> Comm::all_gather(const std::string& text) const {
    int length = count_of(text.size());
    std::vector<int> lengths(static_cast<std::size_t>(size_)), offsets(lengths.size());
    MPI_Allgather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, native_);
    int total = 0;
    for (std::size_t r = 0; r < lengths.size(); ++r) {
        offsets[r] = total;
        total += lengths[r];
    }
    std::string all(static_cast<std::size_t>(total), '\0');
    MPI_Allgatherv(text.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(),
                   MPI_CHAR, native_);
    std::vector<std::string> out;
    for (std::size_t r = 0; r < lengths.size(); ++r)
        out.push_back(
            all.substr(static_cast<std::size_t>(offsets[r]), static_cast<std::size_t>(lengths[r])));
    return out;
}

void Comm::send_bytes(const void* data, std::size_t bytes, int dest, int tag) const {
    MPI_Send(data, count_of(bytes), MPI_BYTE, dest, tag, native_);
}

std::size_t Comm::probe_bytes(int source, int tag) const {
    MPI_Status status;
    MPI_Probe(source, tag, native_, &status);
    int count = 0;
    MPI_Get_count(&status, MPI_BYTE, &count);
    return static_cast<std::size_t>(count);
}

void Comm::recv_bytes(void* data, std::size_t bytes, int source, int tag) const {
    MPI_Recv(data, count_of(bytes), MPI_BYTE, source, tag, native_, MPI_STATUS_IGNORE);
}

bool Comm::try_receive(int source, int& from, int& tag, std::vector<std::uint8_t>& bytes) const {
    int flag = 0;
    MPI_Status status;
    MPI_Iprobe(source, MPI_ANY_TAG, native_, &flag, &status);
    if (!flag) return false;
    int count = 0;
    MPI_Get_count(&status, MPI_BYTE, &count);
    bytes.resize(static_cast<std::size_t>(count));
    MPI_Recv(bytes.data(), count, MPI_BYTE, status.MPI_SOURCE, status.MPI_TAG, native_,
             MPI_STATUS_IGNORE);
    from = status.MPI_SOURCE;
    tag = status.MPI_TAG;
    return true;
}

Comm Comm::node() const {
    auto local = std::shared_ptr<MPI_Comm>(new MPI_Comm, Free{});
    MPI_Comm_split_type(native_, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, local.get());
    Comm c(*local);
    c.owned_ = std::move(local);
    return c;
}

std::string Comm::host() {
    char name[MPI_MAX_PROCESSOR_NAME] = {0};
    int length = 0;
    MPI_Get_processor_name(name, &length);
    return name;
}

void Comm::abort(int code) const {
    MPI_Abort(native_, code);
    std::abort();
}

Outbox::~Outbox() {
    try {
        drain();
    } catch (...) {
    }
}

void Outbox::send(int dest, int tag, std::vector<std::uint8_t> bytes) {
    pending_.push_back({MPI_REQUEST_NULL, std::move(bytes)});
    Pending& p = pending_.back();
    MPI_Isend(p.bytes.data(), count_of(p.bytes.size()), MPI_BYTE, dest, tag, comm_, &p.request);
    progress();
}

void Outbox::progress() {
    for (auto it = pending_.begin(); it != pending_.end();) {
        int done = 0;
        MPI_Test(&it->request, &done, MPI_STATUS_IGNORE);
        it = done ? pending_.erase(it) : std::next(it);
    }
}

void Outbox::drain() {
    for (auto& p : pending_) MPI_Wait(&p.request, MPI_STATUS_IGNORE);
    pending_.clear();
}

void agree(const Comm& comm, const std::function<void()>& work) {
    std::exception_ptr error;
    std::string why;
    try {
        work();
    } catch (const std::exception& e) {
        error = std::current_exception();
        why = e.what();
        if (why.empty()) why = "failed";
    }
    const int first = comm.all_min(error ? comm.rank() : comm.size());
    if (first == comm.size()) return;
    if (first == comm.rank()) {
        if (first != 0) why = "rank " + std::to_string(first) + ": " + why;
        comm.broadcast(why, first);
        std::rethrow_exception(error);
    }
    comm.broadcast(why, first);
    throw Failed(why);
}

}  // namespace compatbench::comm
