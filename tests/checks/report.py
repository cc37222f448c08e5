"""Checks of tests/e2e/report.sh, run as: python3 -m checks report FUNCTION ARGS..."""


def rendered_report(*args):
    argv = ["-", *args]
    import json, re, sys
    import matplotlib.image as mpimg
    dom = open(argv[1]).read()
    m = re.search(r'<body data-images="(\d+)" data-images-loaded="(\d+)"', dom)
    assert m, "the page did not report its images (did its script run?)"
    total, loaded = int(m.group(1)), int(m.group(2))
    info = json.load(open(argv[3]))
    assert total == info["figures"] > 0 and loaded == total, (total, loaded, info["figures"])
    sections = re.findall(r'<section id="([^"]+)">(.*?)</section>', dom, re.S)
    ids = [s for s, _ in sections]
    assert ids == ["alignment", "merging", "prism", "advice", "encoders", "verdicts", "run", "paper"], ids
    for sid, body in sections:
        assert "<img" in body or "<table" in body, f"section {sid} is empty"
    shot = mpimg.imread(argv[2])
    assert shot.shape[0] >= 2000 and shot.std() > 0.05, (shot.shape, shot.std())
    print(f"report: {total} figures all loaded, {len(sections)} sections, screenshot {shot.shape[1]}x{shot.shape[0]}")
