#!/usr/bin/env python3
"""The view's allocator states driven in headless Chromium (tests/browser/cdp.py).

  state_test.py MEMSNAP SNAPSHOT [--keep DIR]

Writes the page with `memsnap view`, loads it and checks, with real values:
  * a click on the time axis at the peak opens the state panel (data-memsnap-states) at
    an instant of that time, and its segments are `memsnap segments --json --event N`'s
    for the event the panel names (data-memsnap-state-event): every segment drawn, each
    block where the JSON has one;
  * hovering the largest allocated block shows a tooltip naming that block's address and
    its site as the JSON gives it; hovering a free block says "free (N bytes)" with the
    JSON's size; clicking the allocated block pins a stack whose frames hold that site;
  * a labelled state's button (an iteration's peak) opens that state, again equal to the
    JSON at its event;
  * no script error; a screenshot of the panel is not blank.
Exit 0 passed, 1 failed, 77 skipped (no Chromium)."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cdp  # noqa: E402
from view_test import FAILS, check, png_look  # noqa: E402


def segments_at(memsnap, snap, event):
    out = subprocess.run([memsnap, "segments", "--json", snap, "--event", str(event)],
                         stdout=subprocess.PIPE, check=True).stdout
    return json.loads(out)["files"][0]["devices"][0]["at"][0]


# The drawn state: every segment and block with its place on the screen.
DRAWN = """(function(){
  var pane = document.querySelector('[data-memsnap-states]');
  var segs = Array.prototype.map.call(pane.querySelectorAll('[data-memsnap-segment]'), function (g) {
    return {addr: g.getAttribute('data-memsnap-segment'),
            blocks: Array.prototype.map.call(g.querySelectorAll('[data-memsnap-block]'), function (r) {
              var b = r.getBoundingClientRect();
              return {addr: r.getAttribute('data-memsnap-block'), free: /url\\(/.test(r.getAttribute('fill')),
                      x: b.left + b.width / 2, y: b.top + b.height / 2, w: b.width};
            })};
  });
  return {hidden: pane.hidden, event: pane.getAttribute('data-memsnap-state-event'),
          time: pane.getAttribute('data-memsnap-state-time'), segs: segs};
})()"""

TIP = """(function(){
  var t = document.querySelector('[data-memsnap-tooltip]');
  var b = t.querySelector('[data-memsnap-block-info]'), s = t.querySelector('[data-memsnap-site]');
  return {hidden: t.hidden, text: t.textContent, block: b ? b.getAttribute('data-memsnap-block-info') : null,
          site: s ? s.getAttribute('data-memsnap-site') : null};
})()"""


def same_as_json(drawn, want, what):
    """The drawn segments are the JSON's (all of them up to the 300 the page shows)."""
    segs = {str(g["address"]): g for g in want["segments"]}
    check(len(drawn["segs"]) == min(300, len(segs)),
          "%s: %d segments drawn, %d in the JSON" % (what, len(drawn["segs"]), len(segs)))
    bad = 0
    for g in drawn["segs"]:
        w = segs.get(g["addr"])
        if not w or [b["addr"] for b in g["blocks"]] != [str(b["address"]) for b in w["blocks"]]:
            bad += 1
            continue
        for b, wb in zip(g["blocks"], w["blocks"]):
            bad += b["free"] != (wb["state"] == "inactive")
    check(bad == 0, "%s: every block drawn where the JSON has it, free ones hatched (%d wrong)" % (what, bad))


def main(argv):
    pos, keep = [], None
    i = 1
    while i < len(argv):
        if argv[i] == "--keep":
            keep = argv[i + 1]
            i += 1
        else:
            pos.append(argv[i])
        i += 1
    memsnap, snap = pos[0], pos[1]
    chromium = cdp.find_chromium()
    if not chromium:
        print("state_test: SKIPPED: chromium is not installed (MEMSNAP_WITH_BROWSER=1 bash .ci/setup)")
        return 77
    tmp = keep or tempfile.mkdtemp(prefix="memsnap-state-")
    os.makedirs(tmp, exist_ok=True)
    page = os.path.join(tmp, "view.html")
    subprocess.run([memsnap, "view", snap, "-o", page], check=True)
    summ = json.loads(subprocess.run([memsnap, "summary", "--json", snap], stdout=subprocess.PIPE,
                                     check=True).stdout)
    peak_s = summ["files"][0]["devices"][0]["peak"]["seconds"]
    b = cdp.Browser(chromium)
    try:
        b.attach()
        b.navigate("file://" + os.path.abspath(page))
        b.eval("new Promise(function(r){(function w(){ if (document.documentElement.getAttribute('data-memsnap-ready')) r(); else setTimeout(w, 20); })(); })")
        n_states = int(b.eval("document.querySelector('[data-memsnap-states]').getAttribute('data-memsnap-states')"))
        check(n_states >= 3, "the page holds allocator states (%d)" % n_states)
        # Where the peak's time lies on the axis, in the page's pixels.
        x, y = b.eval("""(function(){
          var v = window.memsnapViews[0], s = v.svg, r = s.getBoundingClientRect(), k = r.width / s.viewBox.baseVal.width;
          var P = v.D.plot;
          return [r.left + v.pxOfTime(%r) * k, r.top + (P[1] + P[3] + 20) * k];
        })()""" % peak_s)
        b.mouse("mouseMoved", x, y)
        tip = b.eval(TIP)
        check(not tip["hidden"] and "allocator state" in tip["text"],
              "hovering the axis offers the allocator state (%r)" % tip["text"][:80])
        b.click(x, y)
        drawn = b.eval(DRAWN)
        check(not drawn["hidden"], "a click on the time axis opens the state panel")
        check(drawn["time"] is not None and abs(float(drawn["time"]) - peak_s) < 1e-6,
              "the state is at the clicked time (%s s, the peak at %s s)" % (drawn["time"], peak_s))
        ev = int(drawn["event"])
        want = segments_at(memsnap, snap, ev)
        same_as_json(drawn, want, "at the peak (event %d)" % ev)
        blocks = {str(bl["address"]): bl for g in want["segments"] for bl in g["blocks"]}
        drawn_blocks = [bl for g in drawn["segs"] for bl in g["blocks"]]
        used = [bl for bl in drawn_blocks if not bl["free"] and blocks.get(bl["addr"], {}).get("site")]
        used.sort(key=lambda bl: -bl["w"])
        if check(bool(used), "an allocated block with a site to hover"):
            bl = used[0]
            b.mouse("mouseMoved", bl["x"], bl["y"])
            tip = b.eval(TIP)
            w = blocks[bl["addr"]]
            check(tip["block"] == bl["addr"], "the tooltip names the hovered block (%s)" % tip["block"])
            check(tip["site"] == w["site"], "the tooltip names its site as segments --json does (%r, %r)"
                  % (tip["site"], w["site"]))
            b.click(bl["x"], bl["y"])
            stack = b.eval("document.querySelector('[data-memsnap-stack]').textContent")
            check(w["site"].split(" ")[0] in stack, "clicking it pins its stack (%r)" % stack[:100])
        free = [bl for bl in drawn_blocks if bl["free"] and bl["w"] >= 3]
        if free:
            bl = free[0]
            b.mouse("mouseMoved", bl["x"], bl["y"])
            tip = b.eval(TIP)
            check(("free (%d bytes)" % blocks[bl["addr"]]["size"]) in tip["text"],
                  "a free block's tooltip says its size (%r)" % tip["text"][:60])
        shot = os.path.join(tmp, "state.png")
        b.call("Runtime.evaluate", {"expression": "document.querySelector('[data-memsnap-states]').scrollIntoView()"})
        b.screenshot(shot)
        colours, ink, sw, sh = png_look(shot)
        print("screenshot %s: %dx%d, %d colours, %.1f%% ink" % (shot, sw, sh, colours, ink * 100))
        check(colours >= 16 and ink >= 0.05, "the state's screenshot is not blank")
        # An iteration's peak, by its button.
        name = b.eval("""(function(){ var b = document.querySelector('[data-memsnap-state-button^="iteration"]');
                          if (!b) return null; b.click(); return b.getAttribute('data-memsnap-state-button'); })()""")
        if check(name is not None, "a button opens an iteration's peak (%s)" % name):
            drawn = b.eval(DRAWN)
            ev = int(drawn["event"])
            same_as_json(drawn, segments_at(memsnap, snap, ev), "%s (event %d)" % (name, ev))
        b.drain()
        errs = [e for e in b.events if e.get("method") == "Runtime.exceptionThrown"]
        check(not errs, "no script error (%s)" % errs[:1])
    finally:
        b.close()
    if not keep:
        shutil.rmtree(tmp, ignore_errors=True)
    print("state_test: %s" % ("FAILED: " + "; ".join(FAILS) if FAILS else "passed"))
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
