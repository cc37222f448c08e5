#include "exec/messages.h"

#include <spdlog/spdlog.h>

#include <cstdlib>
#include <cstring>
#include <iostream>
#include <stdexcept>
#include <thread>

#include "exec/signals.h"

namespace compatbench {

std::vector<std::uint8_t> encode_assignments(const std::vector<Assignment>& batch) {
    std::vector<std::uint8_t> bytes(batch.size() * 16);
    for (std::size_t i = 0; i < batch.size(); ++i) {
        const std::int64_t pair[2] = {static_cast<std::int64_t>(batch[i].index), batch[i].attempt};
        std::memcpy(bytes.data() + 16 * i, pair, 16);
    }
    return bytes;
}

std::vector<Assignment> decode_assignments(const std::vector<std::uint8_t>& bytes) {
    std::vector<Assignment> batch(bytes.size() / 16);
    for (std::size_t i = 0; i < batch.size(); ++i) {
        std::int64_t pair[2];
        std::memcpy(pair, bytes.data() + 16 * i, 16);
        batch[i] = {static_cast<std::size_t>(pair[0]), static_cast<int>(pair[1])};
    }
    return batch;
}

std::vector<std::uint8_t> encode_int(std::int32_t value) {
    std::vector<std::uint8_t> bytes(4);
    std::memcpy(bytes.data(), &value, 4);
    return bytes;
}

std::int32_t decode_int(const std::vector<std::uint8_t>& bytes) {
    std::int32_t value = 0;
    if (bytes.size() >= 4) std::memcpy(&value, bytes.data(), 4);
    return value;
}

std::vector<std::uint8_t> encode_results(const std::vector<Completion>& results, bool final,
                                         const TaskGraph&, const Config&) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& c : results) {
        nlohmann::json outputs = nlohmann::json::array();
        for (const auto& v : c.outcome.outputs) outputs.push_back(value_to_json(v));
        list.push_back({{"i", c.index},
                        {"a", c.attempt},
                        {"s", static_cast<int>(c.outcome.status)},
                        {"t", c.outcome.start},
                        {"d", c.outcome.duration},
                        {"o", std::move(outputs)},
                        {"e", c.outcome.error}});
    }
    return nlohmann::json::to_msgpack(nlohmann::json{{"final", final}, {"r", std::move(list)}});
}

std::vector<Completion> decode_results(const std::vector<std::uint8_t>& bytes, bool& final,
                                       const TaskGraph& graph, const Config& config) {
    const auto message = nlohmann::json::from_msgpack(bytes);
    final = message.at("final").get<bool>();
    std::vector<Completion> out;
    for (const auto& r : message.at("r")) {
        Completion c;
        c.index = r.at("i").get<std::size_t>();
        c.attempt = r.at("a").get<int>();
        c.outcome.status = static_cast<TaskStatus>(r.at("s").get<int>());
        c.outcome.start = r.at("t").get<double>();
        c.outcome.duration = r.at("d").get<double>();
        c.outcome.error = r.at("e").get<std::string>();
        const auto& columns = config.groups[graph.tasks().at(c.index).group].outputs;
        const auto& o = r.at("o");
        if (c.outcome.status == TaskStatus::done) {
            if (o.size() != columns.size())
                throw std::runtime_error("result message: wrong output count");
            for (std::size_t k = 0; k < columns.size(); ++k) {
                c.outcome.outputs.push_back(value_from_json(o[k], columns[k]));
            }
        }
        out.push_back(std::move(c));
    }
    return out;
}

std::string stop_line(int rank, const std::string& what) {
    return "compatbench: rank " + std::to_string(rank) + ": " + what +
           " (the run stops; the ledger keeps every finished task: fix the cause and continue "
           "with --resume)";
}

[[noreturn]] void abort_job(const comm::Comm& comm, const std::string& what,
                            std::chrono::milliseconds grace) {
    std::cerr << stop_line(comm.rank(), what) << "\n";
    spdlog::error("{} (the run stops)", what);
    spdlog::default_logger()->flush();
    if (comm.rank() != 0) {
        comm::Outbox outbox(comm);
        outbox.send(0, kTagAbort, {what.begin(), what.end()});
        const auto until = std::chrono::steady_clock::now() + grace;
        while (std::chrono::steady_clock::now() < until) {  // the coordinator ends the job
            outbox.progress();
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
    }
    comm.abort(kExitInternal);
}

}  // namespace compatbench
