"""The HTML page: sections, figures (matplotlib, Agg) and tables."""
import html
import os

import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


class Report:
    def __init__(self, out_dir):
        self.dir = os.path.join(out_dir, "report")
        os.makedirs(self.dir, exist_ok=True)
        self.sections = []  # (id, title, [html parts])
        self.n = 0

    def section(self, sid, title):
        self.sections.append((sid, title, []))

    def add(self, part):
        self.sections[-1][2].append(part)

    def figure(self, fig, caption):
        self.n += 1
        name = f"fig{self.n:02d}.png"
        fig.tight_layout()
        fig.savefig(os.path.join(self.dir, name), dpi=90)
        plt.close(fig)
        self.add(f'<figure><img src="{name}" alt="{html.escape(caption)}">'
                 f"<figcaption>{html.escape(caption)}</figcaption></figure>")

    def html_table(self, t, columns=None, limit=40, title=""):
        if t is None:
            return
        columns = [c for c in (columns or sorted(t)) if c in t]
        rows = len(t[columns[0]]) if columns else 0
        head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
        body = []
        for i in range(min(rows, limit)):
            cells = []
            for c in columns:
                v = t[c][i]
                if isinstance(v, (float, np.floating)):
                    v = "nan" if np.isnan(v) else f"{v:.4g}"
                cells.append(f"<td>{html.escape(str(v))}</td>")
            body.append("<tr>" + "".join(cells) + "</tr>")
        more = f"<p class=more>{rows - limit} more rows in results.h5</p>" if rows > limit else ""
        cap = f"<h3>{html.escape(title)}</h3>" if title else ""
        self.add(f"{cap}<table><tr>{head}</tr>{''.join(body)}</table>{more}")

    def write(self, title, subtitle):
        nav = " · ".join(f'<a href="#{s}">{html.escape(t)}</a>' for s, t, _ in self.sections)
        parts = [f'<section id="{s}"><h2>{html.escape(t)}</h2>{"".join(p)}</section>'
                 for s, t, p in self.sections]
        page = f"""<!doctype html><html><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>body{{font-family:sans-serif;max-width:1100px;margin:auto;padding:1em}}
figure{{display:inline-block;margin:.5em;vertical-align:top}} img{{max-width:520px}}
table{{border-collapse:collapse;font-size:12px;margin:.5em 0}} td,th{{border:1px solid #ccc;padding:2px 6px}}
pre{{background:#f6f6f6;padding:.5em;overflow:auto;max-height:300px}} .note{{color:#555}}</style></head>
<body><h1>{html.escape(title)}</h1><p class=note>{html.escape(subtitle)}</p><nav>{nav}</nav>
{''.join(parts)}
<script>
// Marks the page once every image has settled, for automated checks (headless browsers).
window.addEventListener('load', () => {{
  const imgs = [...document.images];
  const ok = imgs.filter(i => i.complete && i.naturalWidth > 0).length;
  document.body.dataset.images = imgs.length;
  document.body.dataset.imagesLoaded = ok;
}});
</script></body></html>"""
        with open(os.path.join(self.dir, "index.html"), "w") as fh:
            fh.write(page)
        return os.path.join(self.dir, "index.html")


def fit_line(ax, x, y):
    ok = np.isfinite(x) & np.isfinite(y)
    if ok.sum() >= 2 and np.ptp(x[ok]) > 0:
        b, a = np.polyfit(x[ok], y[ok], 1)
        xs = np.linspace(x[ok].min(), x[ok].max(), 2)
        ax.plot(xs, a + b * xs, "k--", lw=1)
