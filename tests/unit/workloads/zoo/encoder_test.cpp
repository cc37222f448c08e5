// Every paradigm trains (its loss falls) and the paradigms differ in what their features
// capture: linear-probe accuracy of concept, style, fine detail and geometry labels.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>

#include "zoo/encoder.h"

using namespace compatbench::zoo;

namespace {
// 4-way labels from two coordinates' signs.
std::vector<int> sign_bins(const Mat& m, const std::vector<int>& rows_of) {
    std::vector<int> y;
    for (int r : rows_of) y.push_back((m(r, 0) > 0) + 2 * (m(r, 1) > 0));
    return y;
}
}  // namespace

TEST(Encoders, ParadigmsTrainAndDifferInWhatTheyCapture) {
    WorldSpec ws;
    ws.concepts = 16;
    const World world(ws);
    const Split train = world.make_split("train", 2048), probe = world.make_split("probe", 1024);
    std::map<std::string, std::vector<double>> probes;  // paradigm -> accuracies
    auto evaluate = [&](const std::string& tag, Encoder& enc, const TrainSummary& s, bool trained) {
        const bool vision = enc.spec().modality == Modality::vision;
        // Features per image (text: the image's first caption).
        std::vector<int> rows_of(static_cast<std::size_t>(probe.images.rows()));
        for (std::size_t i = 0; i < rows_of.size(); ++i)
            rows_of[i] = static_cast<int>(i) * (vision ? 1 : ws.captions_per_image);
        Mat inputs(probe.images.rows(), vision ? ws.image_dim : ws.text_dim);
        for (Eigen::Index i = 0; i < inputs.rows(); ++i)
            inputs.row(i) =
                (vision ? probe.images : probe.captions).row(rows_of[static_cast<std::size_t>(i)]);
        const Mat f = enc.encode(inputs);
        std::vector<int> idx(static_cast<std::size_t>(f.rows()));
        for (std::size_t i = 0; i < idx.size(); ++i) idx[i] = static_cast<int>(i);
        const Eigen::Index half = f.rows() / 2;
        auto acc = [&](const std::vector<int>& y, int classes) {
            return linear_probe_accuracy(f.topRows(half),
                                         std::vector<int>(y.begin(), y.begin() + half),
                                         f.bottomRows(f.rows() - half),
                                         std::vector<int>(y.begin() + half, y.end()), classes);
        };
        std::vector<double> a = {acc(probe.scenes.concept_id, ws.concepts),
                                 acc(sign_bins(probe.scenes.style, idx), 4),
                                 acc(sign_bins(probe.scenes.detail, idx), 4),
                                 acc(sign_bins(probe.scenes.geometry, idx), 4)};
        std::printf(
            "%-20s loss %7.3f -> %7.3f  concept %.3f  style %.3f  detail %.3f  geometry %.3f\n",
            tag.c_str(), s.first_loss, s.final_loss, a[0], a[1], a[2], a[3]);
        if (trained) {
            EXPECT_LT(s.final_loss, s.first_loss) << tag;
        }
        probes[tag] = a;
    };
    for (Modality m : {Modality::vision, Modality::text}) {
        const std::vector<Paradigm> paradigms =
            m == Modality::vision
                ? std::vector<Paradigm>{Paradigm::supervised, Paradigm::clip,     Paradigm::siglip,
                                        Paradigm::invariance, Paradigm::masked,   Paradigm::detail,
                                        Paradigm::geometry,   Paradigm::untrained}
                : std::vector<Paradigm>{Paradigm::clip,     Paradigm::siglip,
                                        Paradigm::sentence, Paradigm::invariance,
                                        Paradigm::masked,   Paradigm::classifier,
                                        Paradigm::untrained};
        for (Paradigm p : paradigms) {
            EncoderSpec spec;
            spec.modality = m;
            spec.paradigm = p;
            spec.name = std::string(modality_name(m)) + "_" + paradigm_name(p);
            spec.width = 96;
            spec.steps = 250;
            spec.seed = 3;
            TrainSummary summary;
            Encoder enc = train_encoder(spec, world, train, summary);
            evaluate(spec.name, enc, summary, p != Paradigm::untrained);
        }
    }
    // Visibly different: for the vision paradigms, the spread of probe accuracy across
    // paradigms is large on the concept and on the style factor.
    for (int factor : {0, 1}) {
        double lo = 1, hi = 0;
        for (const auto& [tag, a] : probes) {
            if (tag.rfind("vision", 0) != 0) continue;
            lo = std::min(lo, a[static_cast<std::size_t>(factor)]);
            hi = std::max(hi, a[static_cast<std::size_t>(factor)]);
        }
        EXPECT_GT(hi - lo, 0.1) << "factor " << factor;
    }
}

TEST(Encoders, SameSpecSameBytes) {
    const World world(WorldSpec{});
    const Split train = world.make_split("train", 512);
    EncoderSpec spec;
    spec.name = "v";
    spec.paradigm = Paradigm::clip;
    spec.steps = 20;
    spec.width = 32;
    TrainSummary s1, s2;
    Encoder a = train_encoder(spec, world, train, s1), b = train_encoder(spec, world, train, s2);
    EXPECT_EQ(a.encode(train.images), b.encode(train.images));
    EXPECT_EQ(s1.final_loss, s2.final_loss);
    EXPECT_THROW(paradigm_from_name("sentence", Modality::vision), std::invalid_argument);
    EXPECT_EQ(paradigm_from_name("sentence", Modality::text), Paradigm::sentence);
}
