#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <numeric>

#include "zoo/finetune.h"

using namespace compatbench::zoo;

namespace {
double norm(const std::vector<float>& v) {
    double s = 0;
    for (float x : v) s += static_cast<double>(x) * x;
    return std::sqrt(s);
}
}  // namespace

TEST(Finetune, EveryTaskHasBalancedLabelsFromLatents) {
    WorldSpec ws;
    const World world(ws);
    const Split s = world.make_split("train", 4000);
    const auto tasks = latent_tasks(ws);
    ASSERT_EQ(tasks.size(), 8u);
    for (const auto& t : tasks) {
        const auto y = task_labels(t, s.scenes, ws);
        std::vector<int> count(static_cast<std::size_t>(t.classes), 0);
        for (int v : y) {
            ASSERT_GE(v, 0);
            ASSERT_LT(v, t.classes);
            ++count[static_cast<std::size_t>(v)];
        }
        for (int c : count) EXPECT_GT(c, 4000 / t.classes / 3) << t.name;  // no near-empty class
    }
    EXPECT_THROW(find_latent_task(tasks, "nope"), std::invalid_argument);
}

TEST(Finetune, LearnsTheTaskAndDriftMovesFurther) {
    WorldSpec ws;
    ws.concepts = 16;
    const World world(ws);
    const Split train = world.make_split("train", 2048), eval = world.make_split("eval", 1024);
    EncoderSpec spec;
    spec.name = "backbone";
    spec.paradigm = Paradigm::supervised;
    spec.width = 64;
    spec.steps = 150;
    TrainSummary summary;
    Encoder base = train_encoder(spec, world, train, summary);
    const auto tasks = latent_tasks(ws);
    const LatentTask& style = find_latent_task(tasks, "style_a");
    FinetuneSpec fs;
    fs.task = style.name;
    fs.steps = 150;
    FineTuned short_ft = finetune(base, style, fs, world, train);
    fs.drift = 3.0;
    FineTuned long_ft = finetune(base, style, fs, world, train);
    const double acc_short = task_accuracy(short_ft.encoder, short_ft.head, style, eval, ws);
    const double acc_long = task_accuracy(long_ft.encoder, long_ft.head, style, eval, ws);
    const double tau_short = norm(task_vector(short_ft.encoder, base));
    const double tau_long = norm(task_vector(long_ft.encoder, base));
    std::printf("style_a: accuracy %.3f (150 steps), %.3f (450 steps); |tau| %.4f, %.4f\n",
                acc_short, acc_long, tau_short, tau_long);
    EXPECT_GT(acc_short, 0.4);  // 4 classes: chance is 0.25
    EXPECT_LT(short_ft.summary.final_loss, short_ft.summary.first_loss);
    EXPECT_EQ(long_ft.summary.steps, 450);
    EXPECT_GT(tau_short, 0.0);
    EXPECT_GT(tau_long, tau_short);
}
