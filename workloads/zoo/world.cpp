#include "zoo/world.h"

#include <cmath>
#include <stdexcept>

#include "common/hash.h"

namespace compatbench::zoo {

namespace {
// Row by row, so that the first k rows of an n-row draw equal a k-row draw.
Mat gaussian(Eigen::Index rows, Eigen::Index cols, double sd, nn::Random& rng) {
    Mat m(rows, cols);
    for (Eigen::Index r = 0; r < rows; ++r) {
        for (Eigen::Index c = 0; c < cols; ++c) m(r, c) = static_cast<float>(sd * rng.normal());
    }
    return m;
}

// A fixed two-layer tanh renderer: out = tanh(in W1^T + b1) W2^T, weights scaled so that
// the hidden units are neither saturated nor linear.
Mat render(const Mat& in, const Mat& w1, const nn::Vec<float>& b1, const Mat& w2) {
    Mat h = in * w1.transpose();
    h.rowwise() += b1.transpose();
    return h.array().tanh().matrix() * w2.transpose();
}
}  // namespace

World::World(const WorldSpec& spec) : spec_(spec) {
    if (spec.concepts < 2 || spec.semantic_dim < 1 || spec.caption_detail_dims > spec.detail_dim ||
        spec.captions_per_image < 1 || spec.image_dim < 1 || spec.text_dim < 1) {
        throw std::invalid_argument("world spec: sizes out of range");
    }
    nn::Random rng(splitmix64(spec.seed ^ 0x776f726c64ULL));  // "world"
    centres_ = gaussian(spec.concepts, spec.semantic_dim, 1.0, rng);
    const int image_in = spec.semantic_dim + spec.style_dim + spec.detail_dim + spec.geometry_dim;
    const int text_in = spec.semantic_dim + spec.caption_detail_dims;
    image_w1_ = gaussian(spec.render_hidden, image_in, 1.5 / std::sqrt(image_in), rng);
    image_b1_ = gaussian(spec.render_hidden, 1, 0.3, rng);
    image_w2_ =
        gaussian(spec.image_dim, spec.render_hidden, 1.0 / std::sqrt(spec.render_hidden), rng);
    text_w1_ = gaussian(spec.render_hidden, text_in, 1.5 / std::sqrt(text_in), rng);
    text_b1_ = gaussian(spec.render_hidden, 1, 0.3, rng);
    text_w2_ =
        gaussian(spec.text_dim, spec.render_hidden, 1.0 / std::sqrt(spec.render_hidden), rng);
}

Scenes World::draw_scenes(int n, nn::Random& rng) const {
    // One sample after another: a split's first k scenes do not depend on its size.
    Scenes s;
    s.semantic.resize(n, spec_.semantic_dim);
    s.style.resize(n, spec_.style_dim);
    s.detail.resize(n, spec_.detail_dim);
    s.geometry.resize(n, spec_.geometry_dim);
    for (int i = 0; i < n; ++i) {
        const int c = static_cast<int>(rng.below(static_cast<std::uint64_t>(spec_.concepts)));
        s.concept_id.push_back(c);
        for (int j = 0; j < spec_.semantic_dim; ++j) {
            s.semantic(i, j) =
                centres_(c, j) + static_cast<float>(spec_.concept_spread * rng.normal());
        }
        for (int j = 0; j < spec_.style_dim; ++j) s.style(i, j) = static_cast<float>(rng.normal());
        for (int j = 0; j < spec_.detail_dim; ++j)
            s.detail(i, j) = static_cast<float>(rng.normal());
        for (int j = 0; j < spec_.geometry_dim; ++j)
            s.geometry(i, j) = static_cast<float>(rng.normal());
    }
    return s;
}

Mat World::render_images(const Scenes& s, nn::Random& noise) const {
    const Eigen::Index n = static_cast<Eigen::Index>(s.size());
    Mat in(n, s.semantic.cols() + s.style.cols() + s.detail.cols() + s.geometry.cols());
    in << s.semantic, s.style, static_cast<float>(spec_.detail_amplitude) * s.detail, s.geometry;
    return render(in, image_w1_, image_b1_, image_w2_) +
           gaussian(n, spec_.image_dim, spec_.image_noise, noise);
}

Mat World::render_captions(const Scenes& s, nn::Random& noise,
                           std::vector<int>& caption_image) const {
    const Eigen::Index n = static_cast<Eigen::Index>(s.size());
    const int k = spec_.captions_per_image;
    Mat in(n * k, spec_.semantic_dim + spec_.caption_detail_dims);
    caption_image.assign(static_cast<std::size_t>(n * k), 0);
    for (Eigen::Index i = 0; i < n; ++i) {
        for (int j = 0; j < k; ++j) {
            const Eigen::Index row = i * k + j;
            caption_image[static_cast<std::size_t>(row)] = static_cast<int>(i);
            in.row(row) << s.semantic.row(i), static_cast<float>(spec_.detail_amplitude) *
                                                  s.detail.row(i).head(spec_.caption_detail_dims);
        }
    }
    // Each caption words the scene differently: noise on its latent input and its output,
    // drawn caption by caption (so a split's first captions do not depend on its size).
    Mat out_noise(in.rows(), spec_.text_dim);
    for (Eigen::Index r = 0; r < in.rows(); ++r) {
        for (Eigen::Index c = 0; c < in.cols(); ++c)
            in(r, c) += static_cast<float>(spec_.caption_noise * noise.normal());
        for (Eigen::Index c = 0; c < out_noise.cols(); ++c)
            out_noise(r, c) = static_cast<float>(0.5 * spec_.caption_noise * noise.normal());
    }
    return render(in, text_w1_, text_b1_, text_w2_) + out_noise;
}

Split World::make_split(const std::string& name, int n) const {
    if (n < 1) throw std::invalid_argument("split '" + name + "': needs at least one sample");
    // Separate streams for scenes, image noise and caption noise (each drawn row by row).
    const std::uint64_t base = splitmix64(spec_.seed ^ fnv1a64("split/" + name));
    nn::Random scenes(base), image_noise(base ^ 1), caption_noise(base ^ 2);
    Split split;
    split.name = name;
    split.scenes = draw_scenes(n, scenes);
    split.images = render_images(split.scenes, image_noise);
    split.captions = render_captions(split.scenes, caption_noise, split.caption_image);
    return split;
}

Mat World::augmented_view(const Scenes& scenes, std::uint64_t stream) const {
    nn::Random rng(splitmix64(spec_.seed ^ splitmix64(stream) ^ 0x61756776ULL));  // "augv"
    Scenes other = scenes;
    other.style = gaussian(static_cast<Eigen::Index>(scenes.size()), spec_.style_dim, 1.0, rng);
    return render_images(other, rng);
}

}  // namespace compatbench::zoo
