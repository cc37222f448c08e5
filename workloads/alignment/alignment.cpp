#include "alignment/alignment.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>

#include "common/eigen.h"
#include "nn/adam.h"
#include "nn/layers.h"
#include "nn/losses.h"
#include "nn/random.h"

namespace compatbench::alignment {

namespace {

MatD inverse_sqrt(const MatD& sym) {
    const Eigen::SelfAdjointEigenSolver<MatD> eig(sym);
    if (eig.info() != Eigen::Success) throw std::runtime_error("CSA: eigen-decomposition failed");
    const VecD lambda = eig.eigenvalues();
    if (lambda.minCoeff() <= 0.0)
        throw std::invalid_argument("CSA: a covariance is not positive definite");
    return eig.eigenvectors() * exact_sqrt(lambda.array().inverse()).matrix().asDiagonal() *
           eig.eigenvectors().transpose();
}

MatD cosine_rows(MatD z) {
    const VecD norms = exact_sqrt(z.rowwise().squaredNorm().array()).max(1e-300).matrix();
    return z.array().colwise() / norms.array();
}

MatD embed(const MatF& x, const VecD& mean, const MatD& w) {
    if (x.cols() != mean.size())
        throw std::invalid_argument("CSA: features have " + std::to_string(x.cols()) +
                                    " columns, the adapter was fitted on " +
                                    std::to_string(mean.size()));
    return cosine_rows((x.cast<double>().rowwise() - mean.transpose()) * w);
}

}  // namespace

MatD CsaModel::embed_vision(const MatF& x) const { return embed(x, mean_v, w_v); }
MatD CsaModel::embed_text(const MatF& x) const { return embed(x, mean_t, w_t); }

CsaModel fit_csa(const MatF& vision, const MatF& text, const CsaParams& params) {
    const Eigen::Index n = vision.rows();
    if (text.rows() != n)
        throw std::invalid_argument("CSA: " + std::to_string(n) + " vision rows but " +
                                    std::to_string(text.rows()) + " text rows");
    if (n < 2) throw std::invalid_argument("CSA: needs at least 2 paired rows");
    CsaModel m;
    MatD xv = vision.cast<double>();
    MatD xt = text.cast<double>();
    m.mean_v = xv.colwise().mean().transpose();
    m.mean_t = xt.colwise().mean().transpose();
    xv.rowwise() -= m.mean_v.transpose();
    xt.rowwise() -= m.mean_t.transpose();
    const double denom = static_cast<double>(n - 1);
    MatD svv = (xv.transpose() * xv) / denom;
    MatD stt = (xt.transpose() * xt) / denom;
    const MatD svt = (xv.transpose() * xt) / denom;
    svv.diagonal().array() += params.eps;
    stt.diagonal().array() += params.eps;
    const MatD iv = inverse_sqrt(svv);
    const MatD it = inverse_sqrt(stt);
    const Eigen::JacobiSVD<MatD> svd(iv * svt * it, Eigen::ComputeThinU | Eigen::ComputeThinV);
    const auto dim = static_cast<Eigen::Index>(
        std::min<long>({static_cast<long>(vision.cols()), static_cast<long>(text.cols()),
                        static_cast<long>(params.dim)}));
    m.w_v = (iv * svd.matrixU()).leftCols(dim);
    m.w_t = (it * svd.matrixV()).leftCols(dim);
    m.rho = svd.singularValues().head(dim);
    return m;
}

MatD csa_similarity(const CsaModel& model, const MatF& images, const MatF& captions) {
    const MatD zv = model.embed_vision(images);
    const MatD zt = model.embed_text(captions);
    return (zt * model.rho.asDiagonal()) * zv.transpose();
}

LinearAdapterModel fit_linear_adapter(const MatF& images, const MatF& captions,
                                      const std::vector<int>& caption_image,
                                      const LinearAdapterParams& p) {
    if (static_cast<Eigen::Index>(caption_image.size()) != captions.rows())
        throw std::invalid_argument("linear adapter: caption_image has " +
                                    std::to_string(caption_image.size()) + " entries for " +
                                    std::to_string(captions.rows()) + " captions");
    const int n_images = static_cast<int>(images.rows());
    std::vector<std::vector<int>> own(static_cast<std::size_t>(n_images));
    for (std::size_t c = 0; c < caption_image.size(); ++c) {
        const int i = caption_image[c];
        if (i < 0 || i >= n_images)
            throw std::invalid_argument("linear adapter: caption " + std::to_string(c) +
                                        " names image " + std::to_string(i) + " of " +
                                        std::to_string(n_images));
        own[static_cast<std::size_t>(i)].push_back(static_cast<int>(c));
    }
    std::vector<int> usable;
    for (int i = 0; i < n_images; ++i)
        if (!own[static_cast<std::size_t>(i)].empty()) usable.push_back(i);
    if (usable.size() < 2)
        throw std::invalid_argument("linear adapter: fewer than 2 captioned images");

    nn::Random rng(p.seed);
    nn::Linear<float> wv(static_cast<int>(images.cols()), p.dim, rng);
    nn::Linear<float> wt(static_cast<int>(captions.cols()), p.dim, rng);
    std::vector<nn::Param<float>> params;
    wv.params("vision.", params);
    wt.params("text.", params);
    nn::AdamW<float> adam(params, {.lr = p.lr});
    const int batch = std::min<int>(p.batch, static_cast<int>(usable.size()));
    const long per_epoch = static_cast<long>(usable.size()) / batch;
    const long total = per_epoch * p.epochs;
    const float log_scale = static_cast<float>(std::log(1.0 / p.temperature));
    LinearAdapterModel out;
    nn::Mat<float> xb(batch, images.cols()), tb(batch, captions.cols());
    for (int epoch = 0; epoch < p.epochs; ++epoch) {
        // Fisher-Yates with the adapter's own stream.
        for (std::size_t i = usable.size() - 1; i > 0; --i)
            std::swap(usable[i], usable[static_cast<std::size_t>(rng.below(i + 1))]);
        for (long s = 0; s < per_epoch; ++s) {
            for (int r = 0; r < batch; ++r) {
                const int img = usable[static_cast<std::size_t>(s * batch + r)];
                const auto& caps = own[static_cast<std::size_t>(img)];
                xb.row(r) = images.row(img);
                tb.row(r) = captions.row(caps[static_cast<std::size_t>(rng.below(caps.size()))]);
            }
            adam.zero_grad();
            const auto loss = nn::info_nce<float>(wv.forward(xb), wt.forward(tb), log_scale);
            wv.backward(loss.da);
            wt.backward(loss.db);
            adam.step(nn::scheduled_lr(p.lr, out.steps, total, total / 20));
            out.final_loss = loss.loss;
            ++out.steps;
        }
    }
    out.w_v = wv.weight().cast<double>().transpose();
    out.w_t = wt.weight().cast<double>().transpose();
    out.b_v = wv.bias().cast<double>();
    out.b_t = wt.bias().cast<double>();
    return out;
}

MatD linear_adapter_similarity(const LinearAdapterModel& m, const MatF& images,
                               const MatF& captions) {
    const MatD zv = cosine_rows((images.cast<double>() * m.w_v).rowwise() + m.b_v.transpose());
    const MatD zt = cosine_rows((captions.cast<double>() * m.w_t).rowwise() + m.b_t.transpose());
    return zt * zv.transpose();
}

std::vector<double> recall_at_k(const MatD& sim, const std::vector<int>& caption_image,
                                std::span<const int> ks) {
    const Eigen::Index n_captions = sim.rows();
    const Eigen::Index n_images = sim.cols();
    if (static_cast<Eigen::Index>(caption_image.size()) != n_captions)
        throw std::invalid_argument("recall: caption_image has " +
                                    std::to_string(caption_image.size()) + " entries for " +
                                    std::to_string(n_captions) + " captions");
    std::vector<std::vector<Eigen::Index>> own(static_cast<std::size_t>(n_images));
    for (Eigen::Index c = 0; c < n_captions; ++c) {
        const int i = caption_image[static_cast<std::size_t>(c)];
        if (i < 0 || i >= n_images)
            throw std::invalid_argument("recall: caption " + std::to_string(c) + " names image " +
                                        std::to_string(i) + " of " + std::to_string(n_images));
        own[static_cast<std::size_t>(i)].push_back(c);
    }
    std::vector<double> hits(ks.size(), 0.0);
    for (Eigen::Index i = 0; i < n_images; ++i) {
        const auto& mine = own[static_cast<std::size_t>(i)];
        if (mine.empty())
            throw std::invalid_argument("recall: image " + std::to_string(i) + " has no caption");
        const double* col = sim.col(i).data();
        // Rank of the best own caption: captions strictly above it, or equal with a lower index.
        Eigen::Index best = n_captions;
        for (Eigen::Index c : mine) {
            const double s = col[c];
            Eigen::Index above = 0;
            for (Eigen::Index o = 0; o < n_captions; ++o)
                above += col[o] > s || (col[o] == s && o < c);
            best = std::min(best, above);
        }
        for (std::size_t q = 0; q < ks.size(); ++q) hits[q] += best < ks[q];
    }
    for (double& h : hits) h /= static_cast<double>(n_images);
    return hits;
}

}  // namespace compatbench::alignment
