#!/usr/bin/env python3
"""The interactive timeline driven for real in headless Chromium (DevTools protocol over a
pipe, tests/browser/cdp.py).

  view_test.py MEMSNAP SNAPSHOT [--report] [--max-bytes N] [--max-load SECONDS]
               [--zoom-iteration] [--hover-width F] [--group NAME=REGEX]... [--keep DIR]

Writes the page with `memsnap view` (and with --report, `memsnap report`'s index.html),
loads it from a file:// URL and checks, with real values:
  * the page asks for nothing over the network and throws no script error;
  * hovering the chart shows a tooltip naming a site (data-memsnap-tooltip), and it hides
    when the pointer leaves;
  * clicking that band pins its stack in data-memsnap-stack: for a leak snapshot the
    flagged band's stack must equal `memsnap leaks --json`'s leaks[].stack[] (or hold its
    site where this build's leaks JSON has no stacks); otherwise the stack must hold the
    site the tooltip named;
  * dragging zooms in (a deeper level), double-click zooms out, the by-site switch works;
  * the by-category switch: a band's tooltip names its category and its bytes at the
    hovered column, the legend names the categories, the keyboard walks them;
    with --zoom-iteration a click on the iteration strip zooms to one iteration and the
    bands then are that iteration's own allocations;
  * a screenshot is not blank (many colours, ink over a real part of the page);
  * with --hover-width F: hovering along a line at a quarter of the plot's height finds an
    allocation (a tooltip naming a site) in at least a share F of 60 columns across the
    plot: the run, not an idle start or a slow set-up, gets the width (issue 23);
  * on the run axis (a page with breaks): every break is drawn hatched, its duration under
    the axis, and dragging across one zooms to a window (in seconds) that holds it;
  * with --group (passed to memsnap view and report): the by-group switch, a band's
    tooltip naming one of the groups, the legend naming them.
Prints the page size, the time `memsnap view` took and the load time. Exit 0 passed,
1 failed, 77 skipped (no Chromium)."""
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cdp  # noqa: E402

FAILS = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        FAILS.append(what)
    return ok


def png_look(path):
    """Distinct colours and the share of pixels unlike the top-left one."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, w = 8, b"", 0
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and ctype in (2, 6)
            bpp = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw = zlib.decompress(idat)
    stride = w * bpp
    prev = bytearray(stride)
    colours, ink, bg = set(), 0, None
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        for x in range(0, stride, bpp):
            px = bytes(line[x:x + 3])
            if bg is None:
                bg = px
            colours.add(px)
            ink += px != bg
        prev = line
    return len(colours), ink / float(w * h), w, h


def offline_html(html):
    """Nothing in the page names a place to fetch from."""
    bad = []
    for pat in (r"<script[^>]*\bsrc=", r"<link", r"<iframe", r"<object", r"<embed", r"<img",
                r"@import", r"<base", r"url\((?!#)"):
        if re.search(pat, html):
            bad.append(pat)
    for m in re.finditer(r"(?:src|href)=\"([^\"]*)\"", html):
        if not m.group(1).startswith("#"):
            bad.append(m.group(0))
    for m in re.finditer(r"[a-z]+://[^\s\"'<>)]*", html):
        if not m.group(0).startswith("http://www.w3.org/"):
            bad.append(m.group(0))
    return bad


class Page:
    def __init__(self, b):
        self.b = b

    def plot(self):
        """The plot rectangle in CSS pixels of the first chart."""
        return self.b.eval("""(function(){
          var c = document.querySelector('[data-memsnap-chart]');
          var s = c.querySelector('svg'), r = s.getBoundingClientRect();
          var vb = s.viewBox.baseVal, p = c.getAttribute('data-memsnap-plot').split(' ').map(Number);
          var k = r.width / vb.width;
          return [r.left + p[0] * k, r.top + window.scrollY + p[1] * k, p[2] * k, p[3] * k, window.scrollY];
        })()""")

    def tooltip(self):
        return self.b.eval("""(function(){
          var t = document.querySelector('[data-memsnap-tooltip]');
          var s = t.querySelector('[data-memsnap-site]'), c = t.querySelector('[data-memsnap-category]');
          var g = t.querySelector('[data-memsnap-group]');
          return {hidden: t.hidden, text: t.textContent, site: s ? s.getAttribute('data-memsnap-site') : null,
                  category: c ? c.getAttribute('data-memsnap-category') : null,
                  group: g ? g.getAttribute('data-memsnap-group') : null};
        })()""")

    def stack(self):
        return self.b.eval("""(function(){
          var p = document.querySelector('[data-memsnap-stack]');
          return {text: p.textContent, frames: Array.prototype.map.call(
            p.querySelectorAll('[data-memsnap-frame]'), function (li) { return li.textContent; })};
        })()""")

    def window(self):
        return self.b.eval("""(function(){var v = document.querySelector('[data-memsnap-view]');
          return [Number(v.getAttribute('data-memsnap-level'))].concat(
            v.getAttribute('data-memsnap-window').split(' ').map(Number));})()""")

    def hover_width(self, cols=60, at=0.25):
        """The share of columns, across the plot at `at` of its height, whose hover shows a
        tooltip naming a site."""
        x, y, w, h, sy = self.plot()
        py = y - sy + h - h * at
        hits = 0
        for i in range(cols):
            self.b.mouse("mouseMoved", x + 1 + (w - 2) * (i + 0.5) / cols, py)
            t = self.tooltip()
            hits += (not t["hidden"]) and bool(t["site"])
        return hits / float(cols)

    def scan(self, want, cols=48, rows=14):
        """Hovers a grid over the plot, bottom up, until want(tooltip) holds."""
        x, y, w, h, sy = self.plot()
        for j in range(rows):
            py = y - sy + h - 2 - (h - 4) * j / (rows - 1)
            for i in range(cols):
                px = x + 2 + (w - 4) * (i + 0.5) / cols
                self.b.mouse("mouseMoved", px, py)
                t = self.tooltip()
                if not t["hidden"] and want(t):
                    return px, py, t
        return None


def frames_of(stack_json):
    return ["%s:%d %s" % (f["filename"], f["line"], f.get("name", f.get("function", "")))
            for f in stack_json]


def drive(b, url, args, leaks):
    p = Page(b)
    load = b.navigate(url)
    b.eval("new Promise(function(r){(function w(){ if (document.documentElement.getAttribute('data-memsnap-ready')) r(); else setTimeout(w, 20); })(); })")
    drawn = b.eval("window.memsnapDrawnAt || performance.now()") / 1000.0
    print("load event %.3f s, chart drawn %.3f s after navigation start" % (load, drawn))
    if args.get("max_load"):
        check(drawn <= args["max_load"], "chart drawn within %.1f s (%.3f s)" % (args["max_load"], drawn))
    check(b.eval("document.documentElement.getAttribute('data-memsnap-ready')") not in (None, "0"),
          "the chart script started")
    t = p.tooltip()
    check(t["hidden"], "tooltip hidden before any hover")
    b.call("Runtime.evaluate", {"expression": "document.querySelector('[data-memsnap-chart]').scrollIntoView()"})
    if args.get("hover_width"):
        share = p.hover_width()
        check(share >= args["hover_width"], "hovering across the plot finds allocations in %.0f%% "
              "of the columns (at least %.0f%%)" % (share * 100, args["hover_width"] * 100))

    flagged = [l for l in leaks if l.get("kind") == "leak"]
    if flagged:
        hit = p.scan(lambda t: "flagged as a leak" in t["text"])
        check(hit is not None, "hovering finds a band flagged as a leak")
    else:
        hit = p.scan(lambda t: bool(t["site"]) and re.search(r":\d+", t["site"]))
        check(hit is not None, "hovering finds a band whose tooltip names a site")
    if not hit:
        return
    px, py, t = hit
    print("tooltip at (%.0f, %.0f): %s" % (px, py, t["text"]))
    check(bool(re.search(r"\d+(\.\d+)? (B|KiB|MiB|GiB)", t["text"])), "the tooltip gives a size")
    # A leak finding is one outlined band of all its allocations (issue 23): its tooltip
    # names the finding; an allocation's band gives its own times.
    if not flagged:
        check("allocated" in t["text"] and ("freed at" in t["text"] or "alive at end" in t["text"]),
              "the tooltip gives allocation and free times")
    b.click(px, py)
    st = p.stack()
    print("stack panel: %d frames, first %s" % (len(st["frames"]), st["frames"][:2]))
    check(len(st["frames"]) > 0, "clicking pins a stack with frames")
    if flagged:
        # The band is one of the flagged allocations: its stack is one the leaks JSON names.
        with_stack = [l for l in flagged if l.get("stack")]
        if with_stack:
            want = [frames_of(l["stack"]) for l in with_stack]
            check(any(st["frames"] == w for w in want),
                  "the stack equals a leak's stack[] from memsnap leaks --json")
        else:
            sites = ["%s:%d" % (l["site"]["filename"], l["site"]["line"]) for l in flagged]
            check(any(any(f.startswith(s + " ") for f in st["frames"]) for s in sites),
                  "the stack holds a leaking site from memsnap leaks --json (%s)" % sites)
    else:
        site_loc = t["site"].split(" ")[0]
        check(any(site_loc in f.split(" ")[0] for f in st["frames"]),
              "the stack holds the site the tooltip named (%s)" % site_loc)
    check(b.eval("!!document.querySelector('[data-memsnap-stack] [data-memsnap-copy]')"),
          "the stack panel has a copy button")
    x, y, w, h, sy = p.plot()
    b.mouse("mouseMoved", 5, 5)
    check(p.tooltip()["hidden"], "tooltip hidden after the pointer leaves the chart")

    lvl0 = p.window()
    b.drag(x + w * 0.40, y - sy + h * 0.5, x + w * 0.45, y - sy + h * 0.5)
    lvl1 = p.window()
    print("zoom: level %d window %.4f-%.4f -> level %d window %.4f-%.4f" % tuple(lvl0 + lvl1))
    check(lvl1[2] - lvl1[1] < (lvl0[2] - lvl0[1]) * 0.1, "dragging zooms in to the selection")
    check(lvl1[0] > lvl0[0] or lvl0[0] == b.eval("memsnapViews[0].levels().length - 1"),
          "the zoomed view draws from a deeper level")
    b.mouse("mouseMoved", x + w / 2, y - sy + h / 2)
    b.mouse("mousePressed", x + w / 2, y - sy + h / 2, "left", 1)
    b.mouse("mouseReleased", x + w / 2, y - sy + h / 2, "left", 1)
    b.mouse("mousePressed", x + w / 2, y - sy + h / 2, "left", 2)
    b.mouse("mouseReleased", x + w / 2, y - sy + h / 2, "left", 2)
    check(p.window() == lvl0, "double-click zooms back out")

    if args.get("zoom_iteration"):
        n_it = b.eval("memsnapViews[0].D.it.length")
        check(n_it > 10, "the page knows the iterations (%d)" % n_it)
        # The strip sits just under the plot; a middle iteration, zoomed step by step.
        target = None
        for _ in range(4):
            x, y, w, h, sy = p.plot()
            b.click(x + w * 0.5, y - sy + h + 4)
            win = p.window()
            if win[2] - win[1] < 0.1:
                target = win
                break
        check(target is not None, "clicking the iteration strip zooms to one iteration")
        if target:
            it = b.eval("memsnapViews[0].iterAt(%r)" % ((target[1] + target[2]) / 2)) + 1
            print("zoomed to iteration %d: level %d, window %.5f-%.5f" % (it, target[0], target[1], target[2]))
            hit2 = p.scan(lambda t: ("iteration %d of" % it) in t["text"] and "allocated at" in t["text"])
            check(hit2 is not None, "zoomed into one iteration, hovering finds a band allocated in it")
            if hit2:
                print("zoomed tooltip: %s" % hit2[2]["text"])
            if args.get("shots"):
                b.mouse("mouseMoved", 5, 5)
                b.screenshot(args["shots"] + "-iteration.png")
                colours, ink, w, h = png_look(args["shots"] + "-iteration.png")
                print("zoomed screenshot: %d colours, %.1f%% ink" % (colours, ink * 100))
                check(colours >= 64 and ink >= 0.05, "the zoomed screenshot is not blank")
        b.key("Escape")

    # The keyboard: focus the chart, walk to a band, pin its stack.
    b.eval("document.querySelector('[data-memsnap-chart]').focus()")
    b.call("Runtime.evaluate", {"expression": "document.querySelector('[data-memsnap-stack]').textContent = ''"})
    b.key("ArrowUp")
    t = p.tooltip()
    check(not t["hidden"] and bool(t["site"]), "ArrowUp on the focused chart shows a band's tooltip (%s)" % t["site"])
    b.key("Enter")
    st2 = p.stack()
    check(len(st2["frames"]) > 0 or "No stack" in st2["text"], "Enter pins that band's stack")
    b.key("Escape")
    b.call("Runtime.evaluate", {"expression": "document.querySelector('[data-memsnap-mode=site]').click()"})
    hit3 = p.scan(lambda t: bool(t["site"]) and "held by this site" in t["text"])
    check(hit3 is not None, "by site: hovering a band names a site and its bytes")
    by_category(b, p)
    if args.get("groups"):
        by_group(b, p, args["groups"])
    across_break(b, p, args)


def breaks(b):
    return b.eval("""Array.prototype.map.call(document.querySelectorAll('[data-memsnap-break]'), function (e) {
        var r = e.firstChild; return [e.getAttribute('data-memsnap-break'), Number(r.getAttribute('x')),
                                      Number(r.getAttribute('width'))]; })""")


def across_break(b, p, args):
    """The run axis: the breaks drawn, a duration under the axis; a drag from before the
    first break to after it zooms to a window holding it, where it is drawn wider."""
    b.key("Escape")
    segs = b.eval("memsnapViews[0].D.segs") or []
    gaps = [g for g in segs if g[4]]
    if not gaps:
        print("no breaks on this page's axis (time axis or nothing to compress)")
        return
    br = breaks(b)
    check(len(br) == len(gaps), "every break is drawn (%d of %d)" % (len(br), len(gaps)))
    labels = b.eval("Array.prototype.map.call(document.querySelectorAll('[data-memsnap-chart] svg text'), "
                    "function (e) { return e.textContent; })")
    check(any(t.startswith("\u22ef ") for t in labels), "a break's duration is written under the axis")
    g = gaps[0]
    x, y, w, h, sy = p.plot()
    vb = b.eval("memsnapViews[0].D.plot")
    k = w / vb[2]
    bx0 = x + (br[0][1] - vb[0]) * k
    bx1 = bx0 + br[0][2] * k
    a, c = max(x + 1, bx0 - 0.04 * w), min(x + w - 1, bx1 + 0.04 * w)
    b.drag(a, y - sy + h * 0.5, c, y - sy + h * 0.5)
    win = p.window()
    print("across the break %s (%.4f-%.4f s): window %.4f-%.4f s" % (g[5], g[2], g[3], win[1], win[2]))
    # A break at the axis's start (an idle start) can only be dragged across from inside it.
    starts_ok = win[1] <= g[2] + 1e-6 if g[0] > 0 else win[1] < g[3]
    check(starts_ok and win[2] >= g[3] - 1e-6, "dragging across a break zooms to a window across it")
    br2 = breaks(b)
    check(len(br2) >= 1 and br2[0][2] > br[0][2] * 1.5, "zoomed, the break is drawn wider (%.1f -> %.1f px)"
          % (br[0][2], br2[0][2] if br2 else 0))
    if args.get("shots"):
        b.mouse("mouseMoved", 5, 5)
        b.screenshot(args["shots"] + "-break.png")
    b.key("Escape")


def switch_mode(b, mode):
    """Clicks the page's by-MODE switch: false when the page has none; its button is then
    pressed."""
    button = "document.querySelector('[data-memsnap-mode=%s]')" % mode
    if not check(b.eval("!!" + button), "the page offers by " + mode):
        return False
    b.call("Runtime.evaluate", {"expression": button + ".click()"})
    check(b.eval(button + ".getAttribute('aria-pressed')") == "true",
          "the by-%s button is pressed" % mode)
    return True


def by_group(b, p, groups):
    """The by-group switch (--group): its button, a band's tooltip naming a group, the legend."""
    names = [g.split("=", 1)[0] for g in groups]
    if not switch_mode(b, "group"):
        return
    hit = p.scan(lambda t: t["group"] in names and (" held as " + t["group"]) in t["text"])
    check(hit is not None, "by group: hovering a band names its group (%s) and its bytes" % "/".join(names))
    if hit:
        print("group tooltip: %s" % hit[2]["text"])
    legend = b.eval("Array.prototype.map.call(document.querySelectorAll('[data-memsnap-chart] svg text'), "
                    "function (e) { return e.textContent; })")
    check(any(n in legend for n in names), "the legend names the groups")
    b.mouse("mouseMoved", 5, 5)


CATEGORIES = ("parameter", "optimizer state", "workspace", "gradient", "input", "activation",
              "temporary", "other")


def by_category(b, p):
    """The by-category switch: its button, a band's tooltip naming a category with its
    bytes at the hovered column, the legend of the categories, the keyboard."""
    if not switch_mode(b, "category"):
        return
    # Above the parameters, so the hovered band is one that changes over the steps.
    hit = p.scan(lambda t: t["category"] in CATEGORIES and t["category"] != "parameter"
                 and re.search(r"\d+(\.\d+)? (B|KiB|MiB|GiB) held as " + re.escape(t["category"]), t["text"]))
    check(hit is not None, "by category: hovering a band names its category and its bytes there")
    if hit:
        print("category tooltip: %s" % hit[2]["text"])
    legend = b.eval("""Array.prototype.map.call(document.querySelectorAll('[data-memsnap-chart] svg text'),
                        function (e) { return e.textContent; })""")
    check("bands: what the memory is" in legend and "parameter" in legend,
          "the legend names the categories under its heading")
    b.mouse("mouseMoved", 5, 5)
    b.eval("document.querySelector('[data-memsnap-chart]').focus()")
    b.key("ArrowUp")
    t = p.tooltip()
    check(not t["hidden"] and t["category"] in CATEGORIES,
          "by category: ArrowUp shows a category band's tooltip (%s)" % t["category"])
    b.key("Enter")
    st = p.stack()
    check(t["category"] is not None and t["category"] in st["text"], "Enter pins that category's numbers")
    b.key("Escape")


def main(argv):
    args, pos = {}, []
    i = 1
    while i < len(argv):
        a = argv[i]
        if a == "--report":
            args["report"] = True
        elif a == "--zoom-iteration":
            args["zoom_iteration"] = True
        elif a == "--group":
            args.setdefault("groups", []).append(argv[i + 1])
            i += 1
        elif a in ("--max-bytes", "--max-load", "--keep", "--hover-width"):
            args[a[2:].replace("-", "_")] = argv[i + 1]
            i += 1
        else:
            pos.append(a)
        i += 1
    if "max_load" in args:
        args["max_load"] = float(args["max_load"])
    if "hover_width" in args:
        args["hover_width"] = float(args["hover_width"])
    memsnap, snap = pos[0], pos[1]
    chromium = cdp.find_chromium()
    if not chromium:
        print("view_test: SKIPPED: chromium is not installed (MEMSNAP_WITH_BROWSER=1 bash .ci/setup)")
        return 77
    tmp = args.get("keep") or tempfile.mkdtemp(prefix="memsnap-view-")
    os.makedirs(tmp, exist_ok=True)
    page = os.path.join(tmp, "view.html")
    t0 = time.monotonic()
    gflags = [x for g in args.get("groups", []) for x in ("--group", g)]
    subprocess.run([memsnap, "view", snap, "-o", page] + gflags, check=True)
    took = time.monotonic() - t0
    size = os.path.getsize(page)
    print("memsnap view %s: %.2f s, page %d bytes (%.2f MiB)" % (snap, took, size, size / 1048576.0))
    if "max_bytes" in args:
        check(size <= int(args["max_bytes"]), "page at most %s bytes" % args["max_bytes"])
    lk = subprocess.run([memsnap, "leaks", "--json", snap], stdout=subprocess.PIPE)
    leaks = []
    try:
        for f in json.loads(lk.stdout)["files"]:
            leaks += f.get("leaks", [])
    except (ValueError, KeyError):
        pass
    pages = [page]
    if args.get("report"):
        rdir = os.path.join(tmp, "report")
        subprocess.run([memsnap, "report", snap, "-o", rdir] + gflags, stdout=subprocess.DEVNULL)
        pages.append(os.path.join(rdir, "index.html"))
    for pg in pages:
        if "max_bytes" in args and pg != page:
            check(os.path.getsize(pg) <= int(args["max_bytes"]),
                  "%s at most %s bytes (%d)" % (os.path.basename(pg), args["max_bytes"], os.path.getsize(pg)))
        html = open(pg, encoding="utf-8", errors="replace").read()
        bad = offline_html(html)
        check(not bad, "%s names nothing to fetch %s" % (os.path.basename(pg), bad[:3]))
        b = cdp.Browser(chromium)
        try:
            b.attach()
            print("-- %s" % pg)
            args["shots"] = os.path.join(tmp, os.path.basename(pg))
            drive(b, "file://" + os.path.abspath(pg), args, leaks)
            shot = os.path.join(tmp, os.path.basename(pg) + ".png")
            b.call("Runtime.evaluate", {"expression": "document.querySelector('[data-memsnap-chart]').scrollIntoView()"})
            b.screenshot(shot)
            colours, ink, w, h = png_look(shot)
            print("screenshot %s: %dx%d, %d colours, %.1f%% ink" % (shot, w, h, colours, ink * 100))
            check(colours >= 64 and ink >= 0.05, "the screenshot is not blank")
            b.drain()
            reqs = [e["params"]["request"]["url"] for e in b.events
                    if e.get("method") == "Network.requestWillBeSent"
                    and not e["params"]["request"]["url"].startswith(("file:", "data:"))]
            check(not reqs, "no network request (%s)" % reqs[:3])
            errs = [e for e in b.events if e.get("method") == "Runtime.exceptionThrown"]
            logs = [e["params"]["entry"]["text"] for e in b.events if e.get("method") == "Log.entryAdded"
                    and e["params"]["entry"]["level"] == "error"]
            check(not errs and not logs, "no script error or blocked content (%s %s)" % (errs[:1], logs[:2]))
        finally:
            b.close()
    if not args.get("keep"):
        shutil.rmtree(tmp, ignore_errors=True)
    print("view_test: %s" % ("FAILED: " + "; ".join(FAILS) if FAILS else "passed"))
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
