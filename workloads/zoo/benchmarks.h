// The 16 benchmarks of the multi-encoder pool (zoo.md "Encoder pool"), 4 per category, each
// a classification task defined on the latent scene:
//   General         concept, concept_group, semantic_axes_a, semantic_axes_b
//   Knowledge       arbitrary per-concept facts (attr_a, attr_b, attr_c) and a fact crossed
//                   with the scene (fact_x_semantic): memorised, not seen
//   OCR&Chart       fine-detail sign pairs (ocr_01, ocr_23, ocr_45) and a chart-like
//                   comparison of detail sums (chart_compare)
//   Vision-Centric  geometry (geo_argmax, geo_sign_a, geo_sign_b) and style x geometry
//                   (style_geo)
#pragma once

#include <string>
#include <vector>

#include "zoo/world.h"

namespace compatbench::zoo {

struct Benchmark {
    std::string name;
    std::string category;  // General, Knowledge, OCR&Chart, Vision-Centric
    int classes = 2;
};

std::vector<Benchmark> pool_benchmarks(const WorldSpec& spec);
std::vector<std::string> benchmark_categories();
std::vector<int> benchmark_labels(const Benchmark& benchmark, const Scenes& scenes,
                                  const WorldSpec& spec);

}  // namespace compatbench::zoo
