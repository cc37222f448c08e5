#include "merging/model_merge.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "formats/tensor_reader.h"
#include "merging/mergekit_kernels.h"
#include "merging/stream.h"

namespace compatbench::merging {

CheckpointSource::CheckpointSource(const formats::Checkpoint& base,
                                   const std::vector<formats::Checkpoint>& models,
                                   const std::vector<std::string>& scope, bool any_float_dtype) {
    checkpoints_.push_back(&base);
    for (const auto& m : models) checkpoints_.push_back(&m);
    for (const auto& name : base.names()) {
        PlannedTensor t{name, {0, name}, {}, {}};
        for (std::size_t i = 0; i < models.size(); ++i) t.models.push_back({i + 1, name});
        const auto& info = base.info(name);
        if (formats::dtype_is_float(info.dtype) && in_scope(name, scope)) check(t, any_float_dtype);
        plan_.push_back(std::move(t));
    }
}

CheckpointSource::CheckpointSource(std::vector<const formats::Checkpoint*> checkpoints,
                                   std::vector<PlannedTensor> plan, bool any_float_dtype)
    : checkpoints_(std::move(checkpoints)), plan_(std::move(plan)), planned_(true) {
    for (const auto& t : plan_) {
        const formats::Checkpoint& b = *checkpoints_.at(t.base.checkpoint);
        const auto names = b.names();
        if (!std::binary_search(names.begin(), names.end(), t.base.tensor))
            throw formats::FormatError(b.path() + ": no tensor '" + t.base.tensor + "'");
        if (formats::dtype_is_float(b.info(t.base.tensor).dtype)) check(t, any_float_dtype);
    }
}

// Every model has tensor t with the base's shape (and dtype, unless any float will do).
void CheckpointSource::check(const PlannedTensor& t, bool any_float_dtype) const {
    const formats::Checkpoint& base = *checkpoints_.at(t.base.checkpoint);
    const auto& bt = base.info(t.base.tensor);
    for (const auto& in : t.models) {
        const formats::Checkpoint& m = *checkpoints_.at(in.checkpoint);
        const auto names = m.names();
        if (!std::binary_search(names.begin(), names.end(), in.tensor))
            throw formats::FormatError(m.path() + ": no tensor '" + in.tensor + "' (the base " +
                                       base.path() + " has '" + t.base.tensor + "')");
        const auto& mt = m.info(in.tensor);
        if (mt.shape != bt.shape)
            throw formats::FormatError(m.path() + ": tensor '" + in.tensor +
                                       "' differs in shape from the base " + base.path());
        if (mt.dtype != bt.dtype && !(any_float_dtype && formats::dtype_is_float(mt.dtype)))
            throw formats::FormatError(m.path() + ": tensor '" + in.tensor + "' is " +
                                       formats::dtype_name(mt.dtype) + ", the base's is " +
                                       formats::dtype_name(bt.dtype));
    }
}

const formats::TensorInfo& CheckpointSource::info(std::size_t i) const {
    const auto& b = plan_[i].base;
    return checkpoints_[b.checkpoint]->info(b.tensor);
}
formats::DType CheckpointSource::result_dtype(std::size_t i) const {
    const formats::DType d = compute_dtype(i);
    const Method m = plan_[i].params.method;
    if (planned_ && m == Method::multislerp && plan_[i].models.size() == 1 && !merge_dtype_)
        return checkpoints_[plan_[i].models[0].checkpoint]->info(plan_[i].models[0].tensor).dtype;
    if (planned_ && (m == Method::ramplus_tl || m == Method::arcee_fusion))
        return d == formats::DType::F64 ? d : formats::DType::F32;
    return d;
}
formats::DType CheckpointSource::compute_dtype(std::size_t i) const {
    using formats::DType;
    if (merge_dtype_) return *merge_dtype_;
    DType out = info(i).dtype;
    if (!planned_ || !promotes_dtypes(plan_[i].params.method)) return out;
    for (const auto& in : plan_[i].models) {
        const DType d = checkpoints_[in.checkpoint]->info(in.tensor).dtype;
        if (d != out) out = d == DType::F64 || out == DType::F64 ? DType::F64 : DType::F32;
    }
    return out;
}
void CheckpointSource::compute_in_dtype() {
    using formats::DType;
    for (std::size_t i = 0; i < plan_.size(); ++i) {
        const DType d = compute_dtype(i);
        plan_[i].params.arithmetic = d == DType::BF16  ? Arithmetic::bfloat16
                                     : d == DType::F16 ? Arithmetic::float16
                                     : d == DType::F32 ? Arithmetic::float32
                                                       : Arithmetic::exact;
    }
}
const formats::SafetensorsFile& CheckpointSource::base_file(std::size_t i) const {
    const auto& b = plan_[i].base;
    return checkpoints_[b.checkpoint]->file_of(b.tensor);
}
bool CheckpointSource::matrix(std::size_t i) const { return info(i).shape.size() == 2; }
bool CheckpointSource::kernel(std::size_t i) const { return info(i).shape.size() > 2; }
bool CheckpointSource::mergeable(std::size_t i) const {
    return formats::dtype_is_float(info(i).dtype);
}
std::uint64_t CheckpointSource::numel(std::size_t i) const { return info(i).numel(); }
std::uint64_t CheckpointSource::row_length(std::size_t i) const {
    const auto& shape = info(i).shape;
    return shape.size() <= 1 ? numel(i) : shape[1];
}
std::uint64_t CheckpointSource::last_dim(std::size_t i) const {
    const auto& shape = info(i).shape;
    return shape.empty() ? 1 : shape.back();
}
std::uint64_t CheckpointSource::rank_stride(std::size_t i) const {
    const auto& shape = info(i).shape;
    std::uint64_t stride = 1;
    for (std::size_t d = 2; d < shape.size(); ++d) stride *= shape[d];
    return stride;
}

std::vector<TensorRef> CheckpointSource::refs(std::size_t i) const {
    const PlannedTensor& t = plan_[i];
    const auto ref = [&](const PlannedTensor::Input& in) {
        const formats::Checkpoint& c = *checkpoints_[in.checkpoint];
        return TensorRef{&c.file_of(in.tensor), &c.info(in.tensor)};
    };
    std::vector<TensorRef> refs = {ref(t.base)};
    for (const auto& m : t.models) refs.push_back(ref(m));
    for (const auto& r : refs) r.file->will_need(*r.info);
    return refs;
}

InterferenceSums CheckpointSource::interference(std::size_t i) const {
    const std::vector<TensorRef> all = refs(i);
    return stream_interference(all.front(), std::span(all).subspan(1));
}

namespace {

// A checkpoint tensor's blocks: read a chunk at a time (formats::TensorReader) and
// converted into float32, both into the source's buffers, reused across tensors.
class CheckpointBlocks final : public TensorBlocks {
  public:
    CheckpointBlocks(const std::vector<TensorRef>& refs, CheckpointSource::Buffers& buffers)
        : floats_(buffers.floats) {
        buffers.raw.resize(refs.size());
        floats_.resize(refs.size());
        for (std::size_t r = 0; r < refs.size(); ++r)
            readers_.emplace_back(*refs[r].file, *refs[r].info, buffers.raw[r]);
    }
    std::size_t numel() const override { return readers_[0].numel(); }
    std::size_t models() const override { return readers_.size() - 1; }
    void read(std::size_t begin, std::size_t count, const float*& base,
              std::vector<const float*>& models) override {
        for (std::size_t r = 0; r < readers_.size(); ++r)
            (r == 0 ? base : models[r - 1]) = convert(r, begin, count);
    }
    void read_one(std::size_t begin, std::size_t count, std::size_t i, const float*& base,
                  const float*& model) override {
        base = convert(0, begin, count);
        model = convert(i + 1, begin, count);
    }

  private:
    // Reader r's elements [begin, begin + count) as float32, in its buffer.
    const float* convert(std::size_t r, std::size_t begin, std::size_t count) {
        auto& buffer = floats_[r];
        if (buffer.size() < count) buffer.resize(count);
        formats::to_f32(readers_[r].dtype(), readers_[r].elements(begin, count), count,
                        buffer.data());
        return buffer.data();
    }

    std::vector<formats::TensorReader> readers_;  // the base, then each model
    std::vector<std::vector<float>>& floats_;
};

}  // namespace

std::unique_ptr<TensorBlocks> CheckpointSource::blocks(std::size_t i) const {
    return std::make_unique<CheckpointBlocks>(refs(i), buffers_);
}

std::unique_ptr<TensorBlocks> MemorySource::blocks(std::size_t i) const {
    const Tensor& t = tensors_[i];
    return std::make_unique<SpanBlocks>(
        t.base, std::vector<std::span<const float>>(t.models.begin(), t.models.end()));
}

InterferenceSums MemorySource::interference(std::size_t i) const {
    const Tensor& t = tensors_[i];
    const std::vector<std::span<const float>> models(t.models.begin(), t.models.end());
    return merging::interference(t.base, models);
}

void MergeTotals::add(const TensorMergeStats& st) {
    update_sq += st.update_sq;
    mean_tau_sq += st.mean_tau_sq;
    kept += static_cast<double>(st.kept);
    numel += static_cast<double>(st.numel);
    lambda_sum += st.lambda;
    lambda_n += 1;
}

void MergeTotals::add(const MergeTotals& o) {
    const auto a = values(), b = o.values();
    std::array<double, 6> s;
    for (std::size_t i = 0; i < s.size(); ++i) s[i] = a[i] + b[i];
    *this = from_values(s);
}

double MergeTotals::update_pct() const {
    return mean_tau_sq > 0 ? 100.0 * std::sqrt(update_sq / mean_tau_sq)
                           : std::numeric_limits<double>::quiet_NaN();
}
double MergeTotals::keep_fraction() const {
    return numel > 0 ? kept / numel : std::numeric_limits<double>::quiet_NaN();
}
double MergeTotals::lambda_mean() const { return lambda_n > 0 ? lambda_sum / lambda_n : 0.0; }

std::array<double, 6> MergeTotals::values() const {
    return {update_sq, mean_tau_sq, kept, numel, lambda_sum, lambda_n};
}
MergeTotals MergeTotals::from_values(const std::array<double, 6>& v) {
    return {v[0], v[1], v[2], v[3], v[4], v[5]};
}

ModelMerge::ModelMerge(MergeParams params, std::vector<std::string> scope, Sums sums)
    : params_(std::move(params)), scope_(std::move(scope)), stat_sums_(sums) {}

bool ModelMerge::needs_rho() const { return reads_merge_rho(params_.method); }

void ModelMerge::measure(const TensorSource& source, std::size_t i) {
    if (source.mergeable(i) && in_scope(source.name(i))) sums_.add(source.interference(i));
}

double ModelMerge::rho_of(const InterferenceSums& sums) {
    return sums.interference > 0 ? sums.rho() : 0.0;
}

void ModelMerge::merge(const TensorSource& source, std::size_t i, double rho,
                       const BlockSink& out) {
    TensorScope scope;
    scope.name = source.name(i);
    scope.matrix = source.matrix(i);
    scope.kernel = source.kernel(i);
    scope.in_scope = in_scope(scope.name);
    scope.merge_rho = rho;
    scope.row_length = source.row_length(i);
    scope.rank_stride = source.rank_stride(i);
    scope.last_dim = source.last_dim(i);
    const MergeParams* own = source.params(i);
    const auto blocks = source.blocks(i);
    const TensorMergeStats st =
        merge_tensor(own ? *own : params_, scope, *blocks, out, Kernels::fused, stat_sums_);
    if (scope.in_scope) totals_.add(st);
}

std::vector<float> ModelMerge::merge(const TensorSource& source, std::size_t i, double rho) {
    std::vector<float> values(source.numel(i));
    merge(source, i, rho, [&](std::size_t begin, std::span<const float> merged) {
        std::copy(merged.begin(), merged.end(),
                  values.begin() + static_cast<std::ptrdiff_t>(begin));
    });
    return values;
}

}  // namespace compatbench::merging
