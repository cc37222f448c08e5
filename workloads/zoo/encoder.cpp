#include "zoo/encoder.h"

#include <cmath>
#include <functional>
#include <limits>
#include <stdexcept>

#include "common/hash.h"

namespace compatbench::zoo {

namespace {

struct ParadigmName {
    Paradigm paradigm;
    const char* name;
    bool vision, text;
};
constexpr ParadigmName kParadigms[] = {
    {Paradigm::supervised, "supervised", true, false},
    {Paradigm::clip, "clip", true, true},
    {Paradigm::siglip, "siglip", true, true},
    {Paradigm::invariance, "invariance", true, true},
    {Paradigm::masked, "masked", true, true},
    {Paradigm::sentence, "sentence", false, true},
    {Paradigm::classifier, "classifier", false, true},
    {Paradigm::detail, "detail", true, false},
    {Paradigm::geometry, "geometry", true, false},
    {Paradigm::untrained, "untrained", true, true},
};

nn::MlpSpec tower(int in, int width, int depth, int out) {
    nn::MlpSpec s;
    s.dims.push_back(in);
    for (int i = 0; i < depth; ++i) s.dims.push_back(width);
    s.dims.push_back(out);
    return s;
}

// Rows `idx` of `m`.
Mat rows(const Mat& m, const std::vector<int>& idx) {
    Mat out(static_cast<Eigen::Index>(idx.size()), m.cols());
    for (std::size_t i = 0; i < idx.size(); ++i)
        out.row(static_cast<Eigen::Index>(i)) = m.row(idx[i]);
    return out;
}

std::vector<int> sample(int n, int batch, nn::Random& rng) {
    std::vector<int> idx(static_cast<std::size_t>(std::min(n, batch)));
    for (auto& i : idx) i = static_cast<int>(rng.below(static_cast<std::uint64_t>(n)));
    return idx;
}

}  // namespace

const char* modality_name(Modality m) { return m == Modality::vision ? "vision" : "text"; }

const char* paradigm_name(Paradigm p) {
    for (const auto& e : kParadigms) {
        if (e.paradigm == p) return e.name;
    }
    return "?";
}

Paradigm paradigm_from_name(const std::string& name, Modality modality) {
    std::string allowed;
    for (const auto& e : kParadigms) {
        const bool ok = modality == Modality::vision ? e.vision : e.text;
        if (!ok) continue;
        if (name == e.name) return e.paradigm;
        allowed += (allowed.empty() ? "" : ", ") + std::string(e.name);
    }
    throw std::invalid_argument("paradigm '" + name + "' is not one of the " +
                                modality_name(modality) + " paradigms: " + allowed);
}

Encoder::Encoder(const EncoderSpec& spec, int input_dim)
    : spec_(spec), input_dim_(input_dim), mlp_([&] {
          nn::Random rng(splitmix64(spec.seed ^ fnv1a64("init/" + spec.name)));
          return nn::Mlp<float>(tower(input_dim, spec.width, spec.depth, spec.out_dim), rng);
      }()) {}

Mat Encoder::encode(const Mat& inputs) {
    Mat out(inputs.rows(), spec_.out_dim);
    const Eigen::Index step = 1024;
    for (Eigen::Index r = 0; r < inputs.rows(); r += step) {
        const Eigen::Index n = std::min(step, inputs.rows() - r);
        out.middleRows(r, n) = mlp_.forward(inputs.middleRows(r, n));
    }
    return out;
}

std::vector<nn::Param<float>> Encoder::params() {
    std::vector<nn::Param<float>> p;
    mlp_.params("", p);
    return p;
}

namespace {

// One encoder's training (zoo.md "Paradigms"): the partner modules its paradigm needs
// (discarded afterwards), and one step of its objective. Members are built in declaration
// order from one generator, so the draws (and the bytes) follow the spec's seed alone.
class Trainer {
  public:
    Trainer(const EncoderSpec& spec, const World& world, const Split& train, Encoder& enc)
        : spec_(spec),
          ws_(world.spec()),
          train_(train),
          vision_(spec.modality == Modality::vision),
          mlp_(enc.mlp()),
          rng_(splitmix64(spec.seed ^ fnv1a64("train/" + spec.name))),
          params_(enc.params()),
          partner_(
              tower(vision_ ? ws_.text_dim : ws_.image_dim, spec.width, spec.depth, spec.out_dim),
              rng_),
          decoder_(tower(spec.out_dim, spec.width, 1, vision_ ? ws_.image_dim : ws_.text_dim),
                   rng_),
          head_(spec.out_dim, ws_.concepts, rng_),
          regressor_(spec.out_dim, ws_.geometry_dim, rng_),
          n_detail_heads_(std::max(1, ws_.detail_dim / 2)),
          detail_heads_(spec.out_dim,
                        std::vector<int>(static_cast<std::size_t>(n_detail_heads_), 4), rng_),
          log_scale_(spec.paradigm == Paradigm::siglip ? std::log(10.0f) : std::log(1.0f / 0.07f)) {
        add_paradigm_params(world);
    }

    // The steps of the schedule: the loss's mean over the first and the last ten.
    void run(TrainSummary& summary, const std::atomic<bool>* cancel) {
        nn::AdamW<float> opt(params_, {spec_.lr, 0.9, 0.999, 1e-8, spec_.weight_decay});
        double first = 0.0, last = 0.0;
        const int window = std::min(10, spec_.steps);
        for (int s = 0; s < spec_.steps; ++s) {
            if (cancel && cancel->load(std::memory_order_relaxed))
                throw std::runtime_error("cancelled");
            opt.zero_grad();
            dlog_scale_ = dbias_ = 0.0f;
            const float l = step();
            if (!std::isfinite(l))
                throw std::runtime_error(spec_.name + ": loss is not finite at step " +
                                         std::to_string(s));
            if (s < window) first += l;
            if (s >= spec_.steps - window) last += l;
            opt.step(
                nn::scheduled_lr(spec_.lr, s, spec_.steps, std::max(1, spec_.steps / 20), 0.05));
        }
        summary.first_loss = first / window;
        summary.final_loss = last / window;
        summary.steps = spec_.steps;
    }

  private:
    // The trained parameters beside the encoder's: its paradigm's partner modules.
    void add_paradigm_params(const World& world) {
        switch (spec_.paradigm) {
            case Paradigm::supervised:
            case Paradigm::classifier:
                head_.params("head.", params_);
                break;
            case Paradigm::clip:
            case Paradigm::siglip:
                partner_.params("partner.", params_);
                params_.push_back({"log_scale", &log_scale_, &dlog_scale_, 1, {}});
                if (spec_.paradigm == Paradigm::siglip)
                    params_.push_back({"bias", &bias_, &dbias_, 1, {}});
                break;
            case Paradigm::sentence:
                params_.push_back({"log_scale", &log_scale_, &dlog_scale_, 1, {}});
                break;
            case Paradigm::masked:
                decoder_.params("decoder.", params_);
                break;
            case Paradigm::detail:
                detail_heads_.params("detail.", params_);
                break;
            case Paradigm::geometry:
                regressor_.params("regressor.", params_);
                break;
            case Paradigm::invariance:
                if (vision_) {
                    view1_ = world.augmented_view(train_.scenes, spec_.seed * 2 + 1);
                    view2_ = world.augmented_view(train_.scenes, spec_.seed * 2 + 2);
                }
                break;
            case Paradigm::untrained:
                break;
        }
    }

    // One step of the paradigm's objective; returns the loss.
    float step() {
        switch (spec_.paradigm) {
            case Paradigm::supervised:
            case Paradigm::classifier:
                return step_classify();
            case Paradigm::clip:
            case Paradigm::siglip:
                return step_contrast_modalities();
            case Paradigm::sentence:
            case Paradigm::invariance:
                return step_two_views();
            case Paradigm::masked:
                return step_masked();
            case Paradigm::detail:
                return step_detail();
            case Paradigm::geometry:
                return step_geometry();
            case Paradigm::untrained:
                break;
        }
        throw std::logic_error("an untrained encoder takes no step");
    }

    std::vector<int> batch() {
        return sample(static_cast<int>(train_.images.rows()), spec_.batch, rng_);
    }
    // One caption row, drawn at random, for each image row.
    std::vector<int> random_captions(const std::vector<int>& img) {
        const int k = ws_.captions_per_image;
        std::vector<int> cap;
        for (int i : img)
            cap.push_back(i * k + static_cast<int>(rng_.below(static_cast<std::uint64_t>(k))));
        return cap;
    }
    // The encoder's own modality's rows: images, or one random caption of each image.
    Mat own_rows(const std::vector<int>& img, const std::vector<int>& cap) const {
        return vision_ ? rows(train_.images, img) : rows(train_.captions, cap);
    }

    float step_classify() {
        const auto img = batch();
        const std::vector<int> cap = random_captions(img);
        std::vector<int> y;
        for (int i : img) y.push_back(train_.scenes.concept_id[static_cast<std::size_t>(i)]);
        nn::Mat<float> d;
        const float l =
            nn::softmax_cross_entropy<float>(head_.forward(mlp_.forward(own_rows(img, cap))), y, d);
        mlp_.backward(head_.backward(d));
        return l;
    }

    // CLIP (InfoNCE) or SigLIP (pairwise sigmoid) against the partner tower.
    float step_contrast_modalities() {
        const auto img = batch();
        const std::vector<int> cap = random_captions(img);
        const Mat images = rows(train_.images, img), captions = rows(train_.captions, cap);
        const Mat a = mlp_.forward(vision_ ? images : captions);
        const Mat b = partner_.forward(vision_ ? captions : images);
        const auto g = spec_.paradigm == Paradigm::clip
                           ? nn::info_nce<float>(a, b, log_scale_)
                           : nn::sigmoid_pairwise<float>(a, b, log_scale_, bias_);
        mlp_.backward(g.da);
        partner_.backward(g.db);
        dlog_scale_ = g.dlog_scale;
        dbias_ = g.dbias;
        return g.loss;
    }

    // Sentence (InfoNCE between two captions of an image) or invariance (VICReg between two
    // augmented views): one tower, two views.
    float step_two_views() {
        const int k = ws_.captions_per_image;
        const auto img = batch();
        Mat x1, x2;
        if (vision_) {
            x1 = rows(view1_, img);
            x2 = rows(view2_, img);
        } else {  // two different captions of each image
            std::vector<int> c1, c2;
            for (int i : img) {
                const int j1 = static_cast<int>(rng_.below(static_cast<std::uint64_t>(k)));
                const int j2 =
                    (j1 + 1 + static_cast<int>(rng_.below(static_cast<std::uint64_t>(k - 1)))) % k;
                c1.push_back(i * k + j1);
                c2.push_back(i * k + (k > 1 ? j2 : j1));
            }
            x1 = rows(train_.captions, c1);
            x2 = rows(train_.captions, c2);
        }
        // The second pass's cache serves its own backward; then the first pass again.
        const Mat z1 = mlp_.forward(x1);
        const Mat z2 = mlp_.forward(x2);
        const auto g = spec_.paradigm == Paradigm::sentence
                           ? nn::info_nce<float>(z1, z2, log_scale_)
                           : nn::invariance_vicreg<float>(z1, z2);
        mlp_.backward(g.db);
        mlp_.forward(x1);
        mlp_.backward(g.da);
        dlog_scale_ = g.dlog_scale;
        return g.loss;
    }

    // Masked reconstruction: half the input coordinates hidden, the decoder restores them.
    float step_masked() {
        const auto img = batch();
        const std::vector<int> cap = random_captions(img);
        const Mat x = own_rows(img, cap);
        Mat mask(x.rows(), x.cols());
        for (Eigen::Index r = 0; r < mask.rows(); ++r)
            for (Eigen::Index c = 0; c < mask.cols(); ++c)
                mask(r, c) = rng_.uniform() < 0.5 ? 1.0f : 0.0f;
        const Mat visible = x.cwiseProduct(Mat::Ones(x.rows(), x.cols()) - mask);
        nn::Mat<float> g;
        const float l = nn::masked_mse<float>(decoder_.forward(mlp_.forward(visible)), x, mask, g);
        mlp_.backward(decoder_.backward(g));
        return l;
    }

    // Detail: four-way heads on the signs of pairs of the scene's detail coordinates.
    float step_detail() {
        const auto img = batch();
        std::vector<std::vector<int>> labels(static_cast<std::size_t>(n_detail_heads_));
        for (int i : img) {
            for (int h = 0; h < n_detail_heads_; ++h) {
                const int c0 = std::min(2 * h, ws_.detail_dim - 1);
                const int c1 = std::min(2 * h + 1, ws_.detail_dim - 1);
                labels[static_cast<std::size_t>(h)].push_back(
                    (train_.scenes.detail(i, c0) > 0) + 2 * (train_.scenes.detail(i, c1) > 0));
            }
        }
        detail_heads_.forward(mlp_.forward(rows(train_.images, img)));
        nn::Mat<float> df;
        const float l = detail_heads_.backward(labels, df);
        mlp_.backward(df);
        return l;
    }

    // Geometry: regression of the scene's geometry from the image.
    float step_geometry() {
        const auto img = batch();
        const Mat target = rows(train_.scenes.geometry, img);
        const Mat pred = regressor_.forward(mlp_.forward(rows(train_.images, img)));
        nn::Mat<float> g;
        const float l = nn::masked_mse<float>(pred, target, Mat::Ones(pred.rows(), pred.cols()), g);
        mlp_.backward(regressor_.backward(g));
        return l;
    }

    const EncoderSpec& spec_;
    const WorldSpec& ws_;
    const Split& train_;
    const bool vision_;
    nn::Mlp<float>& mlp_;
    nn::Random rng_;
    std::vector<nn::Param<float>> params_;
    nn::Mlp<float> partner_, decoder_;
    nn::Linear<float> head_, regressor_;
    const int n_detail_heads_;
    nn::MultiTaskHeads<float> detail_heads_;
    float log_scale_, bias_ = -10.0f, dlog_scale_ = 0.0f, dbias_ = 0.0f;
    Mat view1_, view2_;
};

}  // namespace

Encoder train_encoder(const EncoderSpec& spec, const World& world, const Split& train,
                      TrainSummary& summary, const std::atomic<bool>* cancel) {
    Encoder enc(spec,
                spec.modality == Modality::vision ? world.spec().image_dim : world.spec().text_dim);
    summary = {};
    if (spec.paradigm == Paradigm::untrained || spec.steps == 0) {
        summary.first_loss = summary.final_loss = std::numeric_limits<double>::quiet_NaN();
        return enc;
    }
    Trainer(spec, world, train, enc).run(summary, cancel);
    return enc;
}

double linear_probe_accuracy(const Mat& train_x, const std::vector<int>& train_y, const Mat& test_x,
                             const std::vector<int>& test_y, int classes) {
    const Eigen::Index d = train_x.cols();
    const Eigen::RowVectorXd mean = train_x.cast<double>().colwise().mean();
    MatD x(train_x.rows(), d + 1);
    x.leftCols(d) = train_x.cast<double>().rowwise() - mean;
    x.col(d).setOnes();
    MatD y = MatD::Zero(train_x.rows(), classes);
    for (Eigen::Index i = 0; i < y.rows(); ++i) y(i, train_y[static_cast<std::size_t>(i)]) = 1.0;
    MatD gram = x.transpose() * x;
    const double lambda = 1e-2 * gram.leftCols(d).topRows(d).trace() /
                          static_cast<double>(std::max<Eigen::Index>(d, 1));
    gram.diagonal().head(d).array() += lambda;
    const MatD w = gram.ldlt().solve(x.transpose() * y);
    MatD t(test_x.rows(), d + 1);
    t.leftCols(d) = test_x.cast<double>().rowwise() - mean;
    t.col(d).setOnes();
    const MatD scores = t * w;
    std::size_t hits = 0;
    for (Eigen::Index i = 0; i < scores.rows(); ++i) {
        Eigen::Index arg = 0;
        scores.row(i).maxCoeff(&arg);
        hits += arg == test_y[static_cast<std::size_t>(i)];
    }
    return scores.rows() ? static_cast<double>(hits) / static_cast<double>(scores.rows()) : 0.0;
}

}  // namespace compatbench::zoo
