"""Checks of tests/e2e/alignment_real.sh, run as: python3 -m checks alignment_real FUNCTION ARGS..."""


def tables(*args):
    argv = ["-", *args]
    import sys, h5py, numpy as np
    f = h5py.File(argv[1] + "/results.h5", "r")
    pairs = {k: f["alignment/pairs"][k][:] for k in f["alignment/pairs"]}
    assert len(pairs["vision"]) == 6, pairs["vision"]          # 3 vision x 2 text, all fitted
    for col in ("vision_family", "text_family", "vision_paradigm", "text_paradigm", "ease", "ceiling",
                "score", "cka", "region", "r1_flickr", "r1_coco", "r5_flickr", "r10_coco"):
        assert col in pairs, col
    assert np.allclose(pairs["score"], pairs["ease"] * pairs["ceiling"])
    assert all(0 < r <= 1 for r in pairs["r10_flickr"])
    grid = f["alignment/grid"]
    assert len(grid["ease"]) == 6 and "ease_k100" in grid
    corr = f["alignment/analysis/correlations"]
    assert [p.decode() for p in corr["predictor"][:]][:2] == ["score", "score"]
    models = {k: f["real/models"][k][:] for k in f["real/models"]}
    assert list(models["dim"]) == [24] * 5 and models["rows"][0] == 600 + 300 + 80 + 80
    assert list(f["meta/alignment/cost/quantity"][:])[0] == b"predictor_tasks"
    print("real-model alignment: 6 pairs, grid, correlations, model checks")
