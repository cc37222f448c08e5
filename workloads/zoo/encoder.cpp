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

Encoder train_encoder(const EncoderSpec& spec, const World& world, const Split& train,
                      TrainSummary& summary, const std::atomic<bool>* cancel) {
    const WorldSpec& ws = world.spec();
    const bool vision = spec.modality == Modality::vision;
    Encoder enc(spec, vision ? ws.image_dim : ws.text_dim);
    summary = {};
    if (spec.paradigm == Paradigm::untrained || spec.steps == 0) {
        summary.first_loss = summary.final_loss = std::numeric_limits<double>::quiet_NaN();
        return enc;
    }
    nn::Random rng(splitmix64(spec.seed ^ fnv1a64("train/" + spec.name)));
    std::vector<nn::Param<float>> params = enc.params();
    const int n_images = static_cast<int>(train.images.rows());
    const int k = ws.captions_per_image;

    // Partner modules (discarded after training).
    const int other_dim = vision ? ws.text_dim : ws.image_dim;
    nn::Mlp<float> partner(tower(other_dim, spec.width, spec.depth, spec.out_dim), rng);
    nn::Mlp<float> decoder(tower(spec.out_dim, spec.width, 1, vision ? ws.image_dim : ws.text_dim),
                           rng);
    nn::Linear<float> head(spec.out_dim, ws.concepts, rng);
    nn::Linear<float> regressor(spec.out_dim, ws.geometry_dim, rng);
    const int n_detail_heads = std::max(1, ws.detail_dim / 2);
    nn::MultiTaskHeads<float> detail_heads(
        spec.out_dim, std::vector<int>(static_cast<std::size_t>(n_detail_heads), 4), rng);
    float log_scale = spec.paradigm == Paradigm::siglip ? std::log(10.0f) : std::log(1.0f / 0.07f);
    float bias = -10.0f, dlog_scale = 0.0f, dbias = 0.0f;
    Mat view1, view2;
    switch (spec.paradigm) {
        case Paradigm::supervised:
        case Paradigm::classifier:
            head.params("head.", params);
            break;
        case Paradigm::clip:
        case Paradigm::siglip:
            partner.params("partner.", params);
            params.push_back({"log_scale", &log_scale, &dlog_scale, 1, {}});
            if (spec.paradigm == Paradigm::siglip) params.push_back({"bias", &bias, &dbias, 1, {}});
            break;
        case Paradigm::sentence:
            params.push_back({"log_scale", &log_scale, &dlog_scale, 1, {}});
            break;
        case Paradigm::masked:
            decoder.params("decoder.", params);
            break;
        case Paradigm::detail:
            detail_heads.params("detail.", params);
            break;
        case Paradigm::geometry:
            regressor.params("regressor.", params);
            break;
        case Paradigm::invariance:
            if (vision) {
                view1 = world.augmented_view(train.scenes, spec.seed * 2 + 1);
                view2 = world.augmented_view(train.scenes, spec.seed * 2 + 2);
            }
            break;
        case Paradigm::untrained:
            break;
    }
    nn::AdamW<float> opt(params, {spec.lr, 0.9, 0.999, 1e-8, spec.weight_decay});
    auto& mlp = enc.mlp();
    auto concepts_of_images = [&](const std::vector<int>& idx) {
        std::vector<int> y;
        for (int i : idx) y.push_back(train.scenes.concept_id[static_cast<std::size_t>(i)]);
        return y;
    };

    // One caption row, drawn at random, for each image row.
    auto random_captions = [&](const std::vector<int>& img) {
        std::vector<int> cap;
        for (int i : img)
            cap.push_back(i * k + static_cast<int>(rng.below(static_cast<std::uint64_t>(k))));
        return cap;
    };

    // One step of the paradigm's objective; returns the loss.
    std::function<float()> step;
    switch (spec.paradigm) {
        case Paradigm::supervised:
        case Paradigm::classifier:
            step = [&] {
                const auto img = sample(n_images, spec.batch, rng);
                const std::vector<int> cap = random_captions(img);
                const Mat x = vision ? rows(train.images, img) : rows(train.captions, cap);
                nn::Mat<float> d;
                const float l = nn::softmax_cross_entropy<float>(head.forward(mlp.forward(x)),
                                                                 concepts_of_images(img), d);
                mlp.backward(head.backward(d));
                return l;
            };
            break;
        case Paradigm::clip:
        case Paradigm::siglip:
            step = [&] {
                const auto img = sample(n_images, spec.batch, rng);
                const std::vector<int> cap = random_captions(img);
                const Mat images = rows(train.images, img), captions = rows(train.captions, cap);
                const Mat a = mlp.forward(vision ? images : captions);
                const Mat b = partner.forward(vision ? captions : images);
                const auto g = spec.paradigm == Paradigm::clip
                                   ? nn::info_nce<float>(a, b, log_scale)
                                   : nn::sigmoid_pairwise<float>(a, b, log_scale, bias);
                mlp.backward(g.da);
                partner.backward(g.db);
                dlog_scale = g.dlog_scale;
                dbias = g.dbias;
                return g.loss;
            };
            break;
        case Paradigm::sentence:
        case Paradigm::invariance:
            step = [&] {
                const auto img = sample(n_images, spec.batch, rng);
                Mat x1, x2;
                if (vision) {
                    x1 = rows(view1, img);
                    x2 = rows(view2, img);
                } else {  // two different captions of each image
                    std::vector<int> c1, c2;
                    for (int i : img) {
                        const int j1 = static_cast<int>(rng.below(static_cast<std::uint64_t>(k)));
                        const int j2 =
                            (j1 + 1 +
                             static_cast<int>(rng.below(static_cast<std::uint64_t>(k - 1)))) %
                            k;
                        c1.push_back(i * k + j1);
                        c2.push_back(i * k + (k > 1 ? j2 : j1));
                    }
                    x1 = rows(train.captions, c1);
                    x2 = rows(train.captions, c2);
                }
                // One tower, two views: the second pass's cache serves its own backward.
                const Mat z1 = mlp.forward(x1);
                const Mat z2 = mlp.forward(x2);
                const auto g = spec.paradigm == Paradigm::sentence
                                   ? nn::info_nce<float>(z1, z2, log_scale)
                                   : nn::invariance_vicreg<float>(z1, z2);
                mlp.backward(g.db);
                mlp.forward(x1);
                mlp.backward(g.da);
                dlog_scale = g.dlog_scale;
                return g.loss;
            };
            break;
        case Paradigm::masked:
            step = [&] {
                const auto img = sample(n_images, spec.batch, rng);
                const std::vector<int> cap = random_captions(img);
                const Mat x = vision ? rows(train.images, img) : rows(train.captions, cap);
                Mat mask(x.rows(), x.cols());
                for (Eigen::Index r = 0; r < mask.rows(); ++r) {
                    for (Eigen::Index c = 0; c < mask.cols(); ++c)
                        mask(r, c) = rng.uniform() < 0.5 ? 1.0f : 0.0f;
                }
                const Mat visible = x.cwiseProduct(Mat::Ones(x.rows(), x.cols()) - mask);
                nn::Mat<float> g;
                const float l =
                    nn::masked_mse<float>(decoder.forward(mlp.forward(visible)), x, mask, g);
                mlp.backward(decoder.backward(g));
                return l;
            };
            break;
        case Paradigm::detail:
            step = [&] {
                const auto img = sample(n_images, spec.batch, rng);
                std::vector<std::vector<int>> labels(static_cast<std::size_t>(n_detail_heads));
                for (int i : img) {
                    for (int h = 0; h < n_detail_heads; ++h) {
                        const int c0 = std::min(2 * h, ws.detail_dim - 1);
                        const int c1 = std::min(2 * h + 1, ws.detail_dim - 1);
                        labels[static_cast<std::size_t>(h)].push_back(
                            (train.scenes.detail(i, c0) > 0) +
                            2 * (train.scenes.detail(i, c1) > 0));
                    }
                }
                detail_heads.forward(mlp.forward(rows(train.images, img)));
                nn::Mat<float> df;
                const float l = detail_heads.backward(labels, df);
                mlp.backward(df);
                return l;
            };
            break;
        case Paradigm::geometry:
            step = [&] {
                const auto img = sample(n_images, spec.batch, rng);
                const Mat target = rows(train.scenes.geometry, img);
                const Mat pred = regressor.forward(mlp.forward(rows(train.images, img)));
                nn::Mat<float> g;
                const float l =
                    nn::masked_mse<float>(pred, target, Mat::Ones(pred.rows(), pred.cols()), g);
                mlp.backward(regressor.backward(g));
                return l;
            };
            break;
        case Paradigm::untrained:
            break;
    }

    double first = 0.0, last = 0.0;
    const int window = std::min(10, spec.steps);
    for (int s = 0; s < spec.steps; ++s) {
        if (cancel && cancel->load(std::memory_order_relaxed))
            throw std::runtime_error("cancelled");
        opt.zero_grad();
        dlog_scale = dbias = 0.0f;
        const float l = step();
        if (!std::isfinite(l))
            throw std::runtime_error(spec.name + ": loss is not finite at step " +
                                     std::to_string(s));
        if (s < window) first += l;
        if (s >= spec.steps - window) last += l;
        opt.step(nn::scheduled_lr(spec.lr, s, spec.steps, std::max(1, spec.steps / 20), 0.05));
    }
    summary.first_loss = first / window;
    summary.final_loss = last / window;
    summary.steps = spec.steps;
    return enc;
}

double linear_probe_accuracy(const Mat& train_x, const std::vector<int>& train_y, const Mat& test_x,
                             const std::vector<int>& test_y, int classes) {
    using MatD = Eigen::MatrixXd;
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
