"""python -m benchmarks.ui [--steps 40] [--checkpoint DIR]

Launches the app on loopback and drives headless Chromium (Debian's /usr/bin/chromium):
first page load (navigation to a page with the attention view ready and Plotly loaded), then the time
from a click on Step to the last attention plot redrawn (the big heatmap and the layers x heads grid
both resolved), for a 15-word sentence with the overview grid visible. Prints median and p95.
"""
from __future__ import annotations

import argparse
import statistics
import time

from transformer.decoding import Translator
from ui.serving import chromium, serving

from .common import pct
from .decode import SENTENCE

CLICK_AND_WAIT = """async (sel) => {
  const n = window.__lens.renders, t0 = performance.now();
  document.querySelector(sel).click();
  while (window.__lens.renders <= n) await new Promise(r => setTimeout(r, 1));
  window.__lens.lastArrival = window.__lens.recvAt - t0;
  return performance.now() - t0;
}"""


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--checkpoint", default=None)
    p.add_argument("--device", default="auto")
    p.add_argument("--steps", type=int, default=40, help="Step clicks to time")
    p.add_argument("--loads", type=int, default=5, help="page loads to time")
    p.add_argument("--sentence", default=SENTENCE)
    p.add_argument("--kind", default="cross", choices=["encoder_self", "decoder_self", "cross"])
    a = p.parse_args(argv)

    tr = Translator.load(a.checkpoint, a.device)
    print(f"sentence ({len(a.sentence.split())} words): {a.sentence}")
    with serving(tr) as url:
        with chromium() as browser:
            loads = []
            for i in range(a.loads + 1):
                page = browser.new_page(viewport={"width": 1400, "height": 1000})
                t0 = time.perf_counter()
                page.goto(url)
                page.wait_for_function("window.Plotly !== undefined && window.__lens !== undefined")
                if i:  # the first load warms the server's caches
                    loads.append(time.perf_counter() - t0)
                if i < a.loads:
                    page.close()
            page.fill("#source textarea", a.sentence)
            page.evaluate(CLICK_AND_WAIT, "#start")
            if a.kind != "cross":
                page.click(f"#attention [data-kind={a.kind}]")
            steps, draws, arrivals, finished = [], [], [], 0
            while len(steps) < a.steps:
                if "finished" in page.inner_text("#attention [data-role=status]"):
                    finished += 1
                    page.evaluate(CLICK_AND_WAIT, "#reset")
                    continue
                steps.append(page.evaluate(CLICK_AND_WAIT, "#step") / 1000)
                draws.append(page.evaluate("window.__lens.drawMs") / 1000)
                arrivals.append(page.evaluate("window.__lens.lastArrival") / 1000)
            grid = page.evaluate("document.querySelector('#attention [data-role=grid]').layout.meta.panels")
    ms = lambda x: f"{x * 1000:.0f} ms"
    print(f"first page load: median {ms(statistics.median(loads))}, max {ms(max(loads))} (n={len(loads)})")
    print(f"Step click -> last attention plot drawn ({a.kind}, grid of {grid} panels visible): "
          f"median {ms(statistics.median(steps))}, p95 {ms(pct(steps, 95))}, max {ms(max(steps))} "
          f"(n={len(steps)}, {finished} full translations)")
    print(f"  click -> new data in the view (server + Gradio): median {ms(statistics.median(arrivals))}, "
          f"p95 {ms(pct(arrivals, 95))}")
    print(f"  drawing both plots in the browser: median {ms(statistics.median(draws))}, p95 {ms(pct(draws, 95))}")


if __name__ == "__main__":
    main()
