// The seeded synthetic world of the model library (zoo.md "The world"). One seed decides
// everything: concept centres, the fixed random renderers, and every split.
//
// A scene has a concept c (concept_id), a semantic latent s around the concept's centre, a style
// (nuisance) u that captions never mention and augmentations resample, small-amplitude fine
// detail f (text-in-image-like: hard to see), and geometry g. An image is a fixed random
// two-layer tanh rendering of (s, u, detail_amplitude * f, g) plus noise; a caption renders
// s and the first `caption_detail_dims` of f with its own noise, several per image.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "nn/layers.h"

namespace compatbench::zoo {

using Mat = nn::Mat<float>;

struct WorldSpec {
    std::uint64_t seed = 1;
    int concepts = 64;
    int semantic_dim = 16;
    int style_dim = 8;
    int detail_dim = 8;
    int geometry_dim = 4;
    int caption_detail_dims = 4;  // the part of f captions mention
    int image_dim = 64;
    int text_dim = 48;
    int render_hidden = 128;
    int captions_per_image = 5;
    double concept_spread = 0.6;  // sd of s around the concept centre (centres have sd 1)
    double detail_amplitude = 0.3;
    double image_noise = 0.05;
    double caption_noise = 0.25;
};

// The latent scenes of a split, one row per sample.
struct Scenes {
    std::vector<int> concept_id;
    Mat semantic, style, detail, geometry;
    std::size_t size() const { return concept_id.size(); }
};

struct Split {
    std::string name;
    Scenes scenes;
    Mat images;                      // n x image_dim
    Mat captions;                    // (n * captions_per_image) x text_dim
    std::vector<int> caption_image;  // caption row -> image row
};

class World {
  public:
    explicit World(const WorldSpec& spec);
    const WorldSpec& spec() const { return spec_; }

    // Draws `n` scenes for split `name` (its own stream: splits are disjoint draws and do
    // not depend on each other's sizes) and renders its images and captions.
    Split make_split(const std::string& name, int n) const;
    // Images of `scenes` with freshly drawn style and noise: a second view for
    // augmentation-invariance objectives (same content, other nuisance).
    Mat augmented_view(const Scenes& scenes, std::uint64_t stream) const;
    Mat render_images(const Scenes& scenes, nn::Random& noise) const;
    Mat render_captions(const Scenes& scenes, nn::Random& noise,
                        std::vector<int>& caption_image) const;

  private:
    Scenes draw_scenes(int n, nn::Random& rng) const;
    WorldSpec spec_;
    Mat centres_;              // concepts x semantic_dim
    Mat image_w1_, image_w2_;  // renderer weights
    nn::Vec<float> image_b1_;
    Mat text_w1_, text_w2_;
    nn::Vec<float> text_b1_;
};

}  // namespace compatbench::zoo
