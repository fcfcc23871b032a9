/* memsnap's interactive timeline. It draws what memsnap exported (render's chart model,
 * one chart per window of a pyramid; docs/view.md) and computes no grouping and no level
 * of detail of its own: zooming picks the pyramid level whose windows fit the view and
 * draws their columns. Everything from the snapshot reaches the page as text nodes. */
(function () {
  'use strict';
  var NS = 'http://www.w3.org/2000/svg';

  /* ---------------------------------------------------------------- decoding */

  /* base64 of LEB128 varints, as chart_export.c writes them. */
  function uvarints(s) {
    var bin = atob(s || ''), out = [], v = 0, mul = 1;
    for (var i = 0; i < bin.length; i++) {
      var c = bin.charCodeAt(i);
      v += (c & 127) * mul;
      if (c & 128) mul *= 128;
      else { out.push(v); v = 0; mul = 1; }
    }
    return out;
  }
  function zz(u) { return u % 2 ? -(u + 1) / 2 : u / 2; }
  function svarints(s) { var a = uvarints(s); for (var i = 0; i < a.length; i++) a[i] = zz(a[i]); return a; }
  function deltas(s) { var a = svarints(s); for (var i = 1; i < a.length; i++) a[i] += a[i - 1]; return a; }
  /* A curve: deltas shifted by one, 0 starting a run of unchanged columns (chart_export.c). */
  function curveOf(s) {
    var a = uvarints(s), out = [], v = 0;
    for (var i = 0; i < a.length; i++) {
      if (a[i] === 0) { var n = a[++i]; for (var k = 0; k < n; k++) out.push(v); }
      else { v += zz(a[i] - 1); out.push(v); }
    }
    return out;
  }

  /* The x axis. On the run axis (D.axis "run") x values are axis units u, and D.segs maps
   * them to seconds piece by piece: [u0, u1, t0, t1, break, label]; outside a break (and
   * past either end) one unit is one second. Without it u is seconds. warp maps either
   * way, from the column pair f (2: seconds, 0: units) to the pair o. */
  function warp(D, v, f, o) {
    var S = D.segs;
    if (!S || !S.length) return v;
    if (v <= S[0][f]) return S[0][o] + (v - S[0][f]);
    for (var i = 0; i < S.length; i++) {
      var g = S[i];
      if (v <= g[f + 1]) return g[4] ? g[o] + (v - g[f]) / (g[f + 1] - g[f]) * (g[o + 1] - g[o]) : g[o] + (v - g[f]);
    }
    g = S[S.length - 1];
    return g[o + 1] + (v - g[f + 1]);
  }
  function toU(D, t) { return warp(D, t, 2, 0); }
  function toT(D, u) { return warp(D, u, 0, 2); }

  function decodeFile(D) {
    if (D.times === false) EVENTS = true;
    if (D.axis !== 'run') D.segs = null;
    /* The axis's length in x units (seconds, or the run axis's units). */
    D.full = D.axis === 'run' ? D.uspan : D.span > 0 ? D.span : 1e-6;
    var A = D.allocs, n = A.n;
    D.al = { idx: deltas(A.idx), size: uvarints(A.size), talloc: svarints(A.talloc),
             tfree: svarints(A.tfree), stack: svarints(A.stack), site: uvarints(A.site),
             cat: A.cat ? svarints(A.cat) : null,
             cctx: A.cctx ? svarints(A.cctx) : null, umeta: A.umeta ? svarints(A.umeta) : null,
             user: A.user ? svarints(A.user) : null };
    var f = uvarints(D.frames.f), frames = [];
    for (var i = 0; i + 2 < f.length; i += 3) frames.push([f[i], zz(f[i + 1]), f[i + 2]]);
    D.fr = frames;
    var s = uvarints(D.stacks.f), stacks = [], p = 0;
    while (p < s.length) { var k = s[p++], st = []; for (var j = 0; j < k; j++) st.push(zz(s[p++])); stacks.push(st); }
    D.st = stacks;
    var it = svarints(D.iters), iters = [];
    for (i = 0; i + 1 < it.length; i += 2) iters.push([it[i] / 1e6, (it[i] + it[i + 1]) / 1e6]);
    D.it = iters;
    D.tileCache = {};
    return n;
  }

  function decodeTile(D, T) {
    if (T.d) return T.d;
    var C = D.cols, d = { a: curveOf(T.a), r: T.r ? curveOf(T.r) : null, l: T.l ? curveOf(T.l) : null };
    var g = svarints(T.g), gf = uvarints(T.gf), h = uvarints(T.h), G = g.length, p = 0;
    d.groups = [];
    for (var i = 0; i < G; i++) {
      var runs = [], nr = h[p++], c = 0;
      for (var k = 0; k < nr; k++) { c += h[p++]; var len = h[p++], v = h[p++]; runs.push(c, len, v); c += len; }
      d.groups.push({ ref: g[i], fill: D.strings[gf[3 * i]], legend: zz(gf[3 * i + 1]),
                      stack: zz(gf[3 * i + 2]), runs: runs, hl: false, mark: null });
    }
    (T.hl || []).forEach(function (e) { var gr = d.groups[e[0]]; if (gr) { gr.hl = true; gr.mark = e[1] >= 0 ? D.strings[e[1]] : null; } });
    d.lanes = (T.ln || []).map(function (s) {
      var q = uvarints(s), runs = [];
      for (var i = 0; i + 3 < q.length; i += 4) runs.push([q[i], q[i] + q[i + 1], D.strings[q[i + 2]], D.strings[q[i + 3]]]);
      return runs;
    });
    d.dx = (T.x1 - T.x0) / C;
    T.d = d;
    return d;
  }

  /* ---------------------------------------------------------------- formatting */

  /* Sizes as every memsnap text prints them (ms_format_bytes, lib/src/common/format.c):
   * binary units, two decimals. C's %.2f rounds an exact tie (v * 8 odd: 1.125) to the
   * even digit where toFixed rounds up, so ties are settled here first. */
  function fixed2(v) {
    var e = v * 8;
    if (Number.isInteger(e) && e % 2 !== 0) {
      var n = Math.floor(v * 100);
      return ((n % 2 ? n + 1 : n) / 100).toFixed(2);
    }
    return v.toFixed(2);
  }
  function fmtBytes(b) {
    var u = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'], v = Math.abs(Math.round(b)), k = 0;
    var sign = b < 0 ? '-' : '';
    if (v < 1024) return sign + v + ' B';
    while (v >= 1024 && k + 1 < u.length) { v /= 1024; k++; }
    return sign + fixed2(v) + ' ' + u[k];
  }
  /* A trace without times (old PyTorch) is exported with event indexes as microseconds:
   * its instants read as events, never as made-up seconds. */
  var EVENTS = false;
  function fmtS(s) { return EVENTS ? 'event ' + Math.round(s * 1e6) : s.toFixed(s < 10 ? 4 : 3) + ' s'; }
  function isPy(file) { return /\.py$/.test(file); }

  function el(tag, attrs, parent) {
    var e = document.createElementNS(NS, tag);
    for (var k in attrs) e.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(e);
    return e;
  }
  function html(tag, cls, text, parent) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text != null) e.textContent = text;
    if (parent) parent.appendChild(e);
    return e;
  }
  function q4(v) { return Math.round(v * 4) / 4; }

  /* ---------------------------------------------------------------- one chart */

  function View(root, D) {
    this.root = root;
    this.D = D;
    decodeFile(D);
    this.mode = 'alloc';
    this.v0 = 0;
    this.v1 = D.full;
    this.sel = null;      /* the band whose stack is pinned: {tile, group} */
    this.build();
    this.draw();
  }

  View.prototype.levels = function () { return this.D.modes[this.mode]; };

  /* The deepest level whose windows are at least as wide as the view: the view then
   * spans one or two windows and shows between half and all of their columns. */
  View.prototype.level = function () {
    var L = this.levels(), span = this.D.full;
    var want = Math.floor(Math.log2(span / Math.max(this.v1 - this.v0, 1e-12)));
    return Math.max(0, Math.min(L.length - 1, want));
  };

  View.prototype.tiles = function () {
    var L = this.levels()[this.level()], out = [];
    for (var k = 0; k < L.length; k++) {
      var T = L[k];
      if (T.x1 >= this.v0 && T.x0 <= this.v1) out.push(T);
    }
    return out;
  };

  View.prototype.px = function (x) {
    var P = this.D.plot;
    return P[0] + (x - this.v0) / (this.v1 - this.v0) * P[2];
  };
  View.prototype.xAt = function (px) {
    var P = this.D.plot;
    return this.v0 + (px - P[0]) / P[2] * (this.v1 - this.v0);
  };
  View.prototype.py = function (bytes) {
    var P = this.D.plot;
    return q4(P[1] + P[3] - bytes / this.D.ymax * P[3]);
  };
  View.prototype.pyq = function (quarters) {
    var P = this.D.plot;
    return P[1] + P[3] - quarters / 4;
  };

  View.prototype.build = function () {
    var self = this, D = this.D, root = this.root;
    var bar = html('div', 'msv-bar', null, root);
    this.btn = {};
    [['alloc', 'by allocation'], ['site', 'by site'], ['category', 'by category'], ['group', 'by group']].forEach(function (m) {
      if (!D.modes[m[0]]) return;
      var b = html('button', null, m[1], bar);
      b.type = 'button';
      b.setAttribute('data-memsnap-mode', m[0]);
      b.addEventListener('click', function () { self.setMode(m[0]); });
      self.btn[m[0]] = b;
    });
    var reset = html('button', null, 'reset zoom', bar);
    reset.type = 'button';
    reset.addEventListener('click', function () { self.zoom(0, D.full); });
    this.info = html('span', 'msv-info', '', bar);
    var main = html('div', 'msv-main', null, root);
    var box = html('div', 'msv-chart', null, main);
    box.setAttribute('data-memsnap-chart', D.label);
    box.setAttribute('data-memsnap-plot', D.plot.join(' '));
    box.tabIndex = 0;
    box.setAttribute('role', 'application');
    box.setAttribute('aria-label', 'Active memory timeline of ' + D.label +
      '. Drag to zoom, double-click to reset; keys: left and right pan, plus and minus zoom, ' +
      'up and down move between bands, Enter shows the stack, Escape resets.');
    this.box = box;
    this.svg = el('svg', { viewBox: '0 0 ' + D.area[0] + ' ' + D.area[1], role: 'presentation' }, box);
    this.stack = html('aside', 'msv-stack', null, main);
    this.stack.setAttribute('data-memsnap-stack', '');
    this.stack.setAttribute('aria-live', 'polite');
    this.stack.setAttribute('aria-label', 'stack trace of the selected band');
    html('p', 'msv-meta', 'Click a band to pin its stack trace here.', this.stack);
    this.statePane = html('section', 'msv-state', null, root);
    this.statePane.setAttribute('data-memsnap-states', D.states ? String(D.states.list.length) : '0');
    this.statePane.setAttribute('aria-live', 'polite');
    this.statePane.hidden = true;
    this.tip = html('div', 'msv-tip', null, root);
    this.tip.setAttribute('data-memsnap-tooltip', '');
    this.tip.setAttribute('role', 'tooltip');
    this.tip.hidden = true;

    var drag = null;
    function pt(ev) {
      var r = self.svg.getBoundingClientRect();
      return [(ev.clientX - r.left) * D.area[0] / r.width, (ev.clientY - r.top) * D.area[1] / r.height];
    }
    box.addEventListener('mousedown', function (ev) {
      if (ev.button !== 0) return;
      var p = pt(ev), P = D.plot;
      if (p[0] < P[0] || p[0] > P[0] + P[2]) return;
      drag = { x: p[0], y: p[1], moved: false };
      ev.preventDefault();
    });
    window.addEventListener('mousemove', function (ev) {
      if (!drag) return;
      var p = pt(ev);
      if (Math.abs(p[0] - drag.x) > 3) drag.moved = true;
      self.showBrush(drag.moved ? [drag.x, p[0]] : null);
    });
    window.addEventListener('mouseup', function (ev) {
      if (!drag) return;
      var d = drag, p = pt(ev);
      drag = null;
      self.showBrush(null);
      if (d.moved) {
        var P = D.plot, a = Math.max(P[0], Math.min(d.x, p[0])), b = Math.min(P[0] + P[2], Math.max(d.x, p[0]));
        self.zoom(self.xAt(a), self.xAt(b));
      } else {
        self.click(p);
      }
    });
    box.addEventListener('mousemove', function (ev) { if (!drag) self.hover(pt(ev), ev); });
    box.addEventListener('mouseleave', function () { self.hideTip(); });
    box.addEventListener('dblclick', function (ev) { ev.preventDefault(); self.zoom(0, D.full); });
    box.addEventListener('keydown', function (ev) { self.key(ev); });
    this.setMode('alloc');
  };

  View.prototype.setMode = function (m) {
    if (!this.D.modes[m]) return;
    this.mode = m;
    for (var k in this.btn) this.btn[k].setAttribute('aria-pressed', k === m ? 'true' : 'false');
    this.sel = null;
    this.focus = null;
    /* Each grouping has its own depth: keep the view within what this one can show. */
    if (this.v1 > this.v0) this.zoom(this.v0, this.v1);
    else this.draw();
  };

  View.prototype.zoom = function (a, b) {
    var span = this.D.full;
    var L = this.levels(), deepest = L[L.length - 1][0];
    /* Past the deepest windows a column grows wider than a few pixels and shows nothing
     * new; stop there. */
    var min = (deepest.x1 - deepest.x0) / this.D.cols * 16;
    if (b - a < min) { var m = (a + b) / 2; a = m - min / 2; b = m + min / 2; }
    if (a < 0) { b -= a; a = 0; }
    if (b > span) { a -= b - span; b = span; }
    this.v0 = Math.max(0, a);
    this.v1 = Math.min(span, b);
    this.focus = null;
    this.draw();
  };

  /* ---------------------------------------------------------------- drawing */

  View.prototype.draw = function () {
    var D = this.D, svg = this.svg, P = D.plot, th = D.theme, self = this;
    while (svg.firstChild) svg.removeChild(svg.firstChild);
    el('rect', { x: 0, y: 0, width: D.area[0], height: D.area[1], fill: th.bg }, svg);
    var defs = el('defs', {}, svg);
    var clipId = this.root.id + '-clip';
    var cp = el('clipPath', { id: clipId }, defs);
    el('rect', { x: P[0], y: P[1] - 1, width: P[2], height: P[3] + 1 }, cp);
    var tiles = this.tiles(), level = this.level();
    this.shown = tiles.map(function (T) { return { T: T, d: decodeTile(D, T) }; });

    /* Title. */
    var zoomed = this.v0 > 0 || this.v1 < D.full * (1 - 1e-9);
    var w0 = toT(D, this.v0), w1 = toT(D, this.v1);
    var title = D.title + (zoomed ? '  ·  window ' + (EVENTS ? fmtS(w0) + '–' + fmtS(w1)
                                                             : w0.toFixed(3) + '–' + w1.toFixed(3) + ' s') : '');
    var t = el('text', { x: 10, y: 21, 'font-size': 15, 'font-weight': 'bold', fill: th.fg }, svg);
    t.textContent = title;

    /* Annotation lanes, and the top lane tinting the plot. */
    var lanes = el('g', { 'clip-path': 'url(#' + clipId + '-lanes)' }, svg);
    var lcp = el('clipPath', { id: clipId + '-lanes' }, defs);
    el('rect', { x: P[0], y: 0, width: P[2], height: D.area[1] }, lcp);
    this.laneHits = [];
    this.shown.forEach(function (s) {
      s.d.lanes.forEach(function (runs, lane) {
        var lr = D.lanerect[lane];
        runs.forEach(function (r) {
          var x0 = Math.max(P[0], self.px(s.T.x0 + r[0] * s.d.dx)), x1 = Math.min(P[0] + P[2], self.px(s.T.x0 + r[1] * s.d.dx));
          if (x1 <= P[0] || x0 >= P[0] + P[2]) return;
          if (lane === 0) el('rect', { x: x0, y: P[1], width: x1 - x0, height: P[3], fill: r[3], 'fill-opacity': 0.07 }, lanes);
          el('rect', { x: x0, y: lr[0], width: Math.max(x1 - x0, 0.5), height: lr[1], fill: r[3], 'fill-opacity': 0.55 }, lanes);
          if (x1 - x0 >= 48) {
            var tx = el('text', { x: (x0 + x1) / 2, y: lr[0] + lr[1] - 3.5, 'font-size': 10, 'text-anchor': 'middle', fill: th.fg }, lanes);
            tx.textContent = fit(r[2], x1 - x0 - 6, 10);
          }
          self.laneHits.push({ x0: x0, x1: x1, y0: lr[0], y1: lr[0] + lr[1], a: s.T.x0 + r[0] * s.d.dx, b: s.T.x0 + r[1] * s.d.dx, name: r[2] });
        });
      });
    });

    /* Grid. */
    var grid = [], xt = [];
    D.yt.forEach(function (t) { var y = Math.floor(self.py(t[0])) + 0.5; grid.push('M' + P[0] + ' ' + y + 'H' + (P[0] + P[2])); });
    /* The run axis's breaks in view: where they are, and their labels' places, which
     * tick labels keep clear of. */
    var breaks = [];
    (D.segs || []).forEach(function (g) {
      if (!g[4] || g[1] <= self.v0 || g[0] >= self.v1) return;
      var a = Math.max(P[0], self.px(g[0])), b = Math.min(P[0] + P[2], self.px(g[1]));
      /* The chart left out the label where it had no room at the whole trace's scale. */
      var d = g[3] - g[2], label = g[5] || '⋯ ' + (d >= 1 ? d.toFixed(1) + ' s' : (d * 1e3).toFixed(d >= 0.01 ? 0 : 1) + ' ms');
      var mid = (a + b) / 2, last = breaks[breaks.length - 1], full = label;
      if (last && last.label && Math.abs(mid - last.mid) < 60) label = '';
      breaks.push({ a: a, b: b, mid: mid, label: label, full: full });
    });
    this.shown.forEach(function (s) {
      s.T.xt.forEach(function (t) {
        if (t[0] < self.v0 - 1e-12 || t[0] > self.v1 + 1e-12) return;
        if (breaks.some(function (k) { return k.label && Math.abs(self.px(t[0]) - k.mid) < 34; })) return;
        if (xt.length && Math.abs(self.px(t[0]) - self.px(xt[xt.length - 1][0])) < 40) return;
        xt.push(t);
      });
    });
    xt.forEach(function (t) { var x = Math.floor(self.px(t[0])) + 0.5; grid.push('M' + x + ' ' + P[1] + 'V' + (P[1] + P[3])); });
    el('path', { d: grid.join(''), stroke: th.grid, 'stroke-width': 1, fill: 'none' }, svg);

    /* Bands, bottom first, then "other" up to the outline. */
    var plot = el('g', { 'clip-path': 'url(#' + clipId + ')' }, svg);
    var bands = el('g', { 'shape-rendering': 'crispEdges' }, plot);
    var outline = [], reserved = [], low = [], other = [], pale = [];
    this.shown.forEach(function (s) {
      var d = s.d, C = D.cols, acc = new Float64Array(C), drawn = new Float64Array(C);
      var c0 = Math.max(0, Math.floor((self.v0 - s.T.x0) / d.dx)), c1 = Math.min(C - 1, Math.floor((self.v1 - s.T.x0) / d.dx));
      s.c0 = c0; s.c1 = c1; s.paths = [];
      var X = function (c) { return self.px(s.T.x0 + c * d.dx); };
      d.groups.forEach(function (g, gi) {
        var path = bandPath(g.runs, acc, c0, c1, X, self, drawn);
        s.paths.push(path);
        if (path) el('path', { d: path, fill: g.fill }, bands);
        for (var k = 0; k < g.runs.length; k += 3)
          for (var c = g.runs[k]; c < g.runs[k] + g.runs[k + 1]; c++) acc[c] += g.runs[k + 2];
      });
      s.acc = acc;
      /* "other": from the stacked bands up to the column's outline. */
      var c = c0;
      while (c <= c1) {
        while (c <= c1 && !(d.a[c] >= 0 && self.pyq(d.a[c]) < self.py(acc[c]) - 0.2)) c++;
        if (c > c1) break;
        var e = c;
        while (e + 1 <= c1 && d.a[e + 1] >= 0 && self.pyq(d.a[e + 1]) < self.py(acc[e + 1]) - 0.2) e++;
        var top = [], bot = [];
        for (var k = c; k <= e; k++) top.push(X(k) + ' ' + self.pyq(d.a[k]), X(k + 1) + ' ' + self.pyq(d.a[k]));
        for (k = e; k >= c; k--) bot.push(X(k + 1) + ' ' + self.py(drawn[k]), X(k) + ' ' + self.py(drawn[k]));
        other.push('M' + top.join('L') + 'L' + bot.join('L') + 'Z');
        c = e + 1;
      }
      outline.push(curve(d.a, c0, c1, X, self));
      if (d.r) reserved.push(curve(d.r, c0, c1, X, self));
      if (d.l) {
        low.push(curve(d.l, c0, c1, X, self));
        for (k = c0; k <= c1; k++)
          if (d.a[k] >= 0 && d.l[k] < d.a[k])
            pale.push('M' + X(k) + ' ' + self.pyq(d.a[k]) + 'H' + X(k + 1) + 'V' + self.pyq(d.l[k]) + 'H' + X(k) + 'Z');
      }
    });
    if (other.length) el('path', { d: other.join(''), fill: th.other }, bands);
    if (pale.length) el('path', { d: pale.join(''), fill: th.bg, 'fill-opacity': 0.5 }, plot);
    el('path', { d: outline.join(''), stroke: th.outline, 'stroke-opacity': 0.75, 'stroke-width': 0.9, fill: 'none' }, plot);
    if (low.length) el('path', { d: low.join(''), stroke: th.outline, 'stroke-opacity': 0.9, 'stroke-width': 1, 'stroke-dasharray': '3 2', fill: 'none' }, plot);
    if (reserved.length) el('path', { d: reserved.join(''), stroke: th.reserved, 'stroke-opacity': 0.85, 'stroke-width': 1.4, fill: 'none' }, plot);

    /* Breaks: a pale wash with light hatching over what they squeeze (draw.c's look). */
    if (breaks.length) {
      var hid = this.root.id + '-hatch', pat = el('pattern', { id: hid, width: 7, height: 7, patternUnits: 'userSpaceOnUse', patternTransform: 'rotate(45)' }, defs);
      el('path', { d: 'M0 0V7', stroke: th.muted, 'stroke-opacity': 0.55, 'stroke-width': 1 }, pat);
      breaks.forEach(function (k) {
        var r = el('g', { 'data-memsnap-break': k.full }, plot);
        el('rect', { x: k.a, y: P[1], width: Math.max(k.b - k.a, 0.5), height: P[3], fill: th.bg, 'fill-opacity': 0.55 }, r);
        el('rect', { x: k.a, y: P[1], width: Math.max(k.b - k.a, 0.5), height: P[3], fill: 'url(#' + hid + ')' }, r);
      });
    }

    /* Highlighted (leaked) allocations: outlined, the first band of each label pinned. */
    var pins = [];
    this.shown.forEach(function (s) {
      s.d.groups.forEach(function (g, gi) {
        if (!g.hl || !s.paths[gi]) return;
        el('path', { d: s.paths[gi], fill: 'none', stroke: th.highlight, 'stroke-width': 2, 'stroke-linejoin': 'round' }, plot);
        if (g.mark && !pins.some(function (p) { return p.text === g.mark; })) {
          var c = Math.max(g.runs[0], s.c0);
          var bottom = bytesAt(s.d.groups, gi, c, false);
          var x = self.px(s.T.x0 + (c + 0.5) * s.d.dx), y = self.py(bottom + runValue(g.runs, c) / 2);
          pins.push({ x: x, y: y, text: g.mark });
        }
      });
    });
    var placed = [];
    pins.forEach(function (p) {
      var right = p.x + 46 + p.text.length * 6.5 < P[0] + P[2];
      var tx = right ? p.x + 46 : p.x - 46, ty = p.y - 34;
      for (var i = 0; i < 12; i++) {
        ty = p.y - 34 - 16 * (i % 2 ? -(i + 1) / 2 : i / 2);
        if (ty < P[1] + 14) ty += 90;
        if (ty > P[1] + P[3] - 4) ty = P[1] + P[3] - 4;
        if (!placed.some(function (q) { return Math.abs(q - ty) < 15; })) break;
      }
      placed.push(ty);
      el('path', { d: 'M' + tx + ' ' + (ty - 4) + 'L' + p.x + ' ' + p.y, stroke: th.highlight, 'stroke-width': 1.5 }, plot);
      el('circle', { cx: p.x, cy: p.y, r: 3, fill: th.highlight }, plot);
      var lt = el('text', { x: tx, y: ty, 'font-size': 11, 'font-weight': 'bold', fill: th.highlight,
        'text-anchor': right ? 'start' : 'end', stroke: th.bg, 'stroke-width': 3, 'paint-order': 'stroke' }, plot);
      lt.textContent = p.text;
    });

    /* OOM markers and the peak of the windows in view. */
    var oom = [];
    this.shown.forEach(function (s) {
      (s.T.oom || []).forEach(function (c) {
        var x = self.px(s.T.x0 + (c + 0.5) * s.d.dx);
        if (x >= P[0] && x <= P[0] + P[2]) oom.push({ x: x, label: s.T.ooml, n: s.T.oomn, rug: !!s.T.oomr });
      });
    });
    if (oom.length) {
      /* A window whose OOMs fill more than an eighth of its columns marks them along the
       * top only, as render does (oomr): a line down each would hide the bands. */
      var lines = oom.filter(function (o) { return !o.rug; }), rug = oom.filter(function (o) { return o.rug; });
      if (lines.length)
        el('path', { d: lines.map(function (o) { return 'M' + o.x + ' ' + P[1] + 'V' + (P[1] + P[3]); }).join(''),
          stroke: th.oom, 'stroke-width': 1.5, 'stroke-dasharray': '4 3' }, plot);
      if (rug.length)
        el('path', { d: rug.map(function (o) { return 'M' + (o.x - 6) + ' ' + P[1] + 'H' + (o.x + 6) + 'L' + o.x + ' ' + (P[1] + 9) + 'Z'; }).join(''),
          fill: th.oom, 'data-memsnap-oom-rug': String(rug.length) }, plot);
      var ot = el('text', { x: oom[0].x + 8, y: P[1] + 20, 'font-size': 11, 'font-weight': 'bold', fill: th.oom }, plot);
      ot.textContent = oom[0].label + (oom[0].n > 1 ? ' (×' + oom[0].n + ')' : '');
    }
    var pk = null;
    this.shown.forEach(function (s) {
      var p = s.T.pk;
      if (p && p[1] >= self.v0 && p[1] <= self.v1 && (!pk || p[0] > pk[0])) pk = p;
    });
    if (pk) {
      var y = self.py(pk[0]), x = Math.min(P[0] + P[2] - 0.5, self.px(pk[1]));
      el('path', { d: 'M' + P[0] + ' ' + (Math.floor(y) + 0.5) + 'H' + (P[0] + P[2]), stroke: th.peak, 'stroke-dasharray': '2 3' }, plot);
      el('circle', { cx: x, cy: y, r: 4.5, fill: th.peak }, plot);
      var right = x + 10 + pk[2].length * 7 <= P[0] + P[2];
      var pt = el('text', { x: right ? x + 9 : x - 9, y: y - 8 < P[1] + 12 ? y + 18 : y - 8, 'font-size': 12, 'font-weight': 'bold',
        fill: th.peak, 'text-anchor': right ? 'start' : 'end', stroke: th.bg, 'stroke-width': 3, 'paint-order': 'stroke' }, plot);
      pt.textContent = pk[2];
    }

    /* The selected band, outlined. */
    /* Never under the pointer: redrawn on click, it would swallow a double-click. */
    this.selLayer = el('g', { 'pointer-events': 'none' }, plot);
    this.drawSel();

    /* Iterations: a strip under the plot, clickable. */
    this.iterY = P[1] + P[3] + 2;
    var its = D.it, iv = [];
    for (var i = 0; i < its.length; i++) if (its[i][1] >= w0 && its[i][0] <= w1) iv.push(i);
    if (iv.length && iv.length <= P[2] / 3) {
      iv.forEach(function (i) {
        var a = Math.max(P[0], self.px(toU(D, its[i][0]))), b = Math.min(P[0] + P[2], self.px(toU(D, its[i][1])));
        el('rect', { x: a, y: self.iterY, width: Math.max(b - a, 1), height: 5, fill: i % 2 ? '#8fa6cf' : '#2e5aac' }, svg);
      });
    } else if (iv.length) {
      el('rect', { x: P[0], y: self.iterY, width: P[2], height: 5, fill: '#8fa6cf', 'fill-opacity': 0.6 }, svg);
    }
    this.iv = iv;

    /* Axes and labels. */
    var ax = 'M' + P[0] + ' ' + (Math.floor(P[1] + P[3]) + 0.5) + 'H' + (P[0] + P[2]) +
             'M' + (Math.floor(P[0]) - 0.5) + ' ' + P[1] + 'V' + (P[1] + P[3]);
    breaks.forEach(function (k) {
      var yb = Math.floor(P[1] + P[3]) + 0.5;
      ax += 'M' + (k.a - 3) + ' ' + (yb + 5) + 'L' + (k.a + 3) + ' ' + (yb - 5) + 'M' + (k.b - 3) + ' ' + (yb + 5) + 'L' + (k.b + 3) + ' ' + (yb - 5);
      /* Kept inside the plot's width: a break at either end would cut its label. */
      if (!k.label) return;
      var half = k.label.length * 3.3, bx = Math.max(P[0] + half - 8, Math.min(P[0] + P[2] - half + 8, k.mid));
      var bl = el('text', { x: bx, y: P[1] + P[3] + 18, 'font-size': 11, 'text-anchor': 'middle', fill: th.muted }, svg);
      bl.textContent = k.label;
    });
    el('path', { d: ax, stroke: th.muted, 'stroke-width': 1 }, svg);
    D.yt.forEach(function (t) {
      var e = el('text', { x: P[0] - 7, y: self.py(t[0]) + 4, 'font-size': 11, 'text-anchor': 'end', fill: th.fg }, svg);
      e.textContent = t[1];
    });
    /* Zoomed past the deepest windows, their ticks may all fall outside the view: then
     * the view's two ends are labelled instead. */
    if (xt.length < 2) xt = [[this.v0, fmtS(w0)], [this.v1, fmtS(w1)]];
    xt.forEach(function (t, i) {
      var x = self.px(t[0]);
      var anchor = i === 0 && x < P[0] + 20 ? 'start' : x > P[0] + P[2] - 20 ? 'end' : 'middle';
      var e = el('text', { x: x, y: P[1] + P[3] + 18, 'font-size': 11, 'text-anchor': anchor, fill: th.fg }, svg);
      e.textContent = t[1];
    });
    var xtl = el('text', { x: P[0] + P[2] / 2, y: P[1] + P[3] + 36, 'font-size': 11, 'text-anchor': 'middle', fill: th.muted }, svg);
    xtl.textContent = D.xtitle + (its.length ? ' · strip: iterations (click one to zoom)' : '') +
      (D.states ? ' · click the axis for the allocator\'s state' : '');
    /* The instants whose state the page holds: small marks on the axis. */
    if (D.states) {
      var sm = [];
      D.states.list.forEach(function (S) {
        var x = self.px(toU(D, S.t / 1e6));
        if (x >= P[0] && x <= P[0] + P[2]) sm.push('M' + (Math.round(x) + 0.5) + ' ' + (P[1] + P[3] + 22) + 'v4');
      });
      if (sm.length) el('path', { d: sm.join(''), stroke: th.muted, 'stroke-width': 1, 'data-memsnap-state-marks': String(sm.length) }, svg);
    }
    var ytl = el('text', { transform: 'translate(14 ' + (P[1] + P[3] / 2) + ') rotate(-90)', 'font-size': 11, 'text-anchor': 'middle', fill: th.muted }, svg);
    ytl.textContent = 'active memory (requested bytes)';

    /* Legend of the window in view (its first one when two share the view). */
    var LR = D.legrect;
    if (LR[2] > 0 && this.shown.length) {
      var leg = this.shown[0].T.leg, g = el('g', {}, svg);
      var head = el('text', { x: LR[0], y: LR[1] + 11, 'font-size': 11, 'font-weight': 'bold', fill: th.fg }, g);
      head.textContent = D.legtitle ? D.legtitle[this.mode] || '' : this.mode === 'site' ? 'bands: allocation sites' : 'largest allocations, by site';
      var rows = Math.max(0, Math.floor((LR[3] - 22) / D.legrow));
      leg.slice(0, rows).forEach(function (e, i) {
        var y = LR[1] + 22 + i * D.legrow, col = D.strings[e[1]];
        if (e[0] === 0) el('rect', { x: LR[0], y: y + 2, width: 12, height: 11, fill: col }, g);
        else if (e[0] === 3) el('circle', { cx: LR[0] + 6, cy: y + 7.5, r: 4, fill: col }, g);
        else el('path', { d: 'M' + LR[0] + ' ' + (y + 7.5) + 'h12', stroke: col, 'stroke-width': 2, 'stroke-dasharray': e[0] === 2 ? '4 2.5' : 'none' }, g);
        var tx = el('text', { x: LR[0] + 18, y: y + 12, 'font-size': 11, fill: th.fg }, g);
        tx.textContent = fit(D.strings[e[2]], LR[2] - 18, 11);
      });
    }
    this.brush = el('rect', { x: 0, y: P[1], width: 0, height: P[3], fill: '#2e5aac', 'fill-opacity': 0.15, stroke: '#2e5aac', visibility: 'hidden' }, svg);
    var shownCols = 0;
    this.shown.forEach(function (s) { shownCols += s.c1 - s.c0 + 1; });
    this.info.textContent = 'zoom level ' + (level + 1) + ' of ' + this.levels().length +
      ' · ' + shownCols + ' columns of ' + fmtS((this.v1 - this.v0) / Math.max(shownCols, 1)) + ' each · drag to zoom, double-click to reset';
    this.root.setAttribute('data-memsnap-level', String(level));
    /* Seconds since the first event, whatever the axis. */
    this.root.setAttribute('data-memsnap-window', w0 + ' ' + w1);
  };

  /* Cuts text to about `w` pixels (an estimate: the page has no text metrics before it
   * draws, and the full text is in the tooltip). */
  function fit(s, w, size) {
    var max = Math.floor(w / (size * 0.56));
    return s.length <= max ? s : s.slice(0, Math.max(0, max - 1)) + '…';
  }

  function runValue(runs, c) {
    for (var k = 0; k < runs.length; k += 3) if (c >= runs[k] && c < runs[k] + runs[k + 1]) return runs[k + 2];
    return 0;
  }
  /* Bytes of the bands below group gi (inclusive: up to and including it) in column c. */
  function bytesAt(groups, gi, c, inclusive) {
    var s = 0;
    for (var i = 0; i < (inclusive ? gi + 1 : gi); i++) s += runValue(groups[i].runs, c);
    return s;
  }

  /* A band's runs as closed step polygons over the columns c0..c1 (acc: the bytes below
   * it per column), as draw.c's band_path draws them. Bands thinner than a fifth of a
   * pixel are left out as draw.c leaves them out; as there, a run reaches down to `drawn`
   * (the top of the bands drawn so far) and raises it, so a band left out leaves no gap. */
  function bandPath(runs, acc, c0, c1, X, v, drawn) {
    var out = '';
    for (var k = 0; k < runs.length; k += 3) {
      var a = Math.max(runs[k], c0), b = Math.min(runs[k] + runs[k + 1] - 1, c1), h = runs[k + 2];
      if (a > b) continue;
      if (h / v.D.ymax * v.D.plot[3] < 0.2) continue;
      var top = [], bot = [], prev = null;
      for (var c = a; c <= b; c++) {
        var y = v.py(acc[c] + h);
        if (y !== prev) { if (prev !== null) top.push(X(c) + ' ' + prev); top.push(X(c) + ' ' + y); prev = y; }
      }
      top.push(X(b + 1) + ' ' + prev);
      prev = null;
      for (c = b; c >= a; c--) {
        var yb = v.py(drawn[c]);
        drawn[c] = acc[c] + h;
        if (yb !== prev) { if (prev !== null) bot.push(X(c + 1) + ' ' + prev); bot.push(X(c + 1) + ' ' + yb); prev = yb; }
      }
      bot.push(X(a) + ' ' + prev);
      out += 'M' + top.join('L') + 'L' + bot.join('L') + 'Z';
    }
    return out;
  }

  function curve(vals, c0, c1, X, v) {
    var d = '', open = false, prev = 0;
    for (var c = c0; c <= c1; c++) {
      if (vals[c] < 0) { if (open) d += 'H' + X(c); open = false; continue; }
      var y = v.pyq(vals[c]);
      if (!open) { d += 'M' + X(c) + ' ' + y; open = true; }
      else if (y !== prev) d += 'H' + X(c) + 'V' + y;
      prev = y;
    }
    if (open) d += 'H' + X(c1 + 1);
    return d;
  }

  View.prototype.showBrush = function (r) {
    if (!this.brush) return;
    if (!r) { this.brush.setAttribute('visibility', 'hidden'); return; }
    var P = this.D.plot, a = Math.max(P[0], Math.min(r[0], r[1])), b = Math.min(P[0] + P[2], Math.max(r[0], r[1]));
    this.brush.setAttribute('x', a);
    this.brush.setAttribute('width', Math.max(0, b - a));
    this.brush.setAttribute('visibility', 'visible');
  };

  /* ---------------------------------------------------------------- picking */

  /* What is under a point of the plot: the window and column, and the band. */
  View.prototype.pick = function (p) {
    var D = this.D, P = D.plot;
    if (p[0] < P[0] || p[0] >= P[0] + P[2] || p[1] < P[1] || p[1] > P[1] + P[3]) return null;
    var x = this.xAt(p[0]);
    for (var i = 0; i < this.shown.length; i++) {
      var s = this.shown[i], c = Math.floor((x - s.T.x0) / s.d.dx);
      if (c < 0 || c >= D.cols || x > s.T.x1) continue;
      var bytes = (P[1] + P[3] - p[1]) / P[3] * D.ymax, acc = 0, gs = s.d.groups;
      if (s.d.a[c] < 0) return null;
      for (var g = 0; g < gs.length; g++) {
        var h = runValue(gs[g].runs, c);
        if (h > 0 && bytes >= acc && bytes < acc + h) return { s: s, c: c, g: g, x: x, below: acc, h: h };
        acc += h;
      }
      var top = s.d.a[c] / 4 / P[3] * D.ymax;
      if (bytes >= acc && bytes <= top + D.ymax / P[3]) return { s: s, c: c, g: -1, x: x, below: acc, h: Math.max(0, top - acc) };
      return { s: s, c: c, g: -2, x: x };
    }
    return null;
  };

  View.prototype.iterAt = function (t) {
    var its = this.D.it, lo = 0, hi = its.length;
    while (lo < hi) { var m = (lo + hi) >> 1; if (its[m][1] < t) lo = m + 1; else hi = m; }
    return lo < its.length && its[lo][0] <= t ? lo : -1;
  };

  /* The facts of a band, for the tooltip and the stack panel. */
  View.prototype.describe = function (hit) {
    var D = this.D, g = hit.s.d.groups[hit.g], out = { lines: [] };
    if (g.ref >= 0) {
      var a = g.ref, al = D.al;
      out.title = D.strings[al.site[a]];
      out.size = al.size[a];
      out.stack = al.stack[a];
      var ta = al.talloc[a], tf = al.tfree[a];
      out.lines.push(fmtBytes(al.size[a]) + ' allocation' + (g.hl ? ' · flagged as a leak' : ''));
      /* The user's line behind a site in a library (chart_export.c writes it only then). */
      if (al.user && al.user[a] >= 0) out.lines.push('from ' + D.strings[al.user[a]]);
      if (al.cat && al.cat[a] >= 0) out.lines.push('category: ' + D.strings[al.cat[a]].replace(/_/g, ' '));
      /* Only traces recorded with them carry these columns (chart_export.c). */
      if (al.cctx && al.cctx[a] >= 0) out.lines.push('compile context: ' + D.strings[al.cctx[a]]);
      if (al.umeta && al.umeta[a] >= 0) out.lines.push('user metadata: ' + D.strings[al.umeta[a]]);
      out.lines.push('allocated ' + (ta >= 0 ? 'at ' + fmtS(ta / 1e6) : 'before the trace began') +
                     ' · ' + (tf >= 0 ? 'freed at ' + fmtS(tf / 1e6) : 'alive at end'));
      var it = ta >= 0 ? this.iterAt(ta / 1e6) : -1;
      if (D.it.length) out.lines.push(it >= 0 ? 'iteration ' + (it + 1) + ' of ' + D.it.length : 'outside the iterations');
      out.key = 'a' + a;
    } else if (this.mode === 'category' || this.mode === 'group') {
      /* A category band: what it holds at the hovered column, and its share of it. */
      out.title = D.strings[-1 - g.ref];
      out.category = out.title;
      out.group = this.mode === 'group';
      out.size = hit.h;
      out.stack = -1;
      var total = hit.s.acc ? hit.s.acc[hit.c] : 0;
      out.lines.push(fmtBytes(hit.h) + ' held as ' + out.title + ' here' +
                     (total > 0 ? ' (' + (100 * hit.h / total).toFixed(1) + '% of ' + fmtBytes(total) + ')' : ''));
      var it3 = this.iterAt(toT(D, hit.x));
      out.lines.push('at ' + fmtS(toT(D, hit.x)) + (D.it.length && it3 >= 0 ? ' · iteration ' + (it3 + 1) + ' of ' + D.it.length : ''));
      out.note = 'A ' + (out.group ? 'group' : 'category') + ' holds many allocations: switch to by allocation for their stacks.';
      out.key = 's' + g.ref;
    } else {
      out.title = D.strings[-1 - g.ref];
      out.size = hit.h;
      out.stack = g.stack;
      out.lines.push(fmtBytes(hit.h) + (g.hl ? ' held by this leak finding here · flagged as a leak'
                                             : ' held by this site here'));
      var it2 = this.iterAt(toT(D, hit.x));
      if (D.it.length && it2 >= 0) out.lines.push('iteration ' + (it2 + 1) + ' of ' + D.it.length);
      out.lines.push('stack: this site\'s largest allocation');
      out.key = 's' + g.ref;
    }
    return out;
  };

  /* What the grey band on top is in each grouping (render's legend says the same). */
  var REMAINDER = { alloc: 'smaller allocations', site: 'other sites', category: 'no allocation recorded', group: 'other' };

  /* The tooltip's heading: a band's site, or its category (test hooks: docs/view.md). */
  function tipTitle(t, info) {
    var b = html('b', null, info.title, t);
    b.setAttribute(info.group ? 'data-memsnap-group' : info.category ? 'data-memsnap-category' : 'data-memsnap-site', info.title);
  }

  View.prototype.tipAt = function (p, ev, content) {
    var tip = this.tip;
    while (tip.firstChild) tip.removeChild(tip.firstChild);
    content(tip);
    tip.hidden = false;
    var r = this.root.getBoundingClientRect(), br = this.svg.getBoundingClientRect();
    var cx = ev ? ev.clientX : br.left + p[0] * br.width / this.D.area[0];
    var cy = ev ? ev.clientY : br.top + p[1] * br.height / this.D.area[1];
    var x = cx - r.left + 14, y = cy - r.top + 14;
    if (x + tip.offsetWidth > r.width) x = Math.max(0, cx - r.left - tip.offsetWidth - 14);
    tip.style.left = x + 'px';
    tip.style.top = y + 'px';
  };

  View.prototype.hideTip = function () { this.tip.hidden = true; };

  View.prototype.hover = function (p, ev) {
    var self = this, D = this.D, P = D.plot;
    /* Lanes and the iteration strip name what they cover. */
    var lane = (this.laneHits || []).filter(function (h) { return p[0] >= h.x0 && p[0] < h.x1 && p[1] >= h.y0 && p[1] < h.y1; })[0];
    if (lane) {
      this.tipAt(p, ev, function (t) {
        html('b', null, lane.name, t);
        html('div', 'msv-dim', fmtS(toT(D, lane.a)) + ' – ' + fmtS(toT(D, lane.b)) + ' · click to zoom', t);
      });
      return;
    }
    if (p[1] >= this.iterY - 1 && p[1] <= this.iterY + 7 && p[0] >= P[0] && p[0] < P[0] + P[2]) {
      var it = this.iterAt(toT(D, this.xAt(p[0])));
      if (it >= 0) {
        this.tipAt(p, ev, function (t) {
          html('b', null, 'iteration ' + (it + 1) + ' of ' + D.it.length, t);
          html('div', 'msv-dim', fmtS(D.it[it][0]) + ' – ' + fmtS(D.it[it][1]) + ' · click to zoom', t);
        });
        return;
      }
    }
    if (this.onAxis(p)) {
      var at = toT(D, this.xAt(p[0])), k = this.stateNear(at);
      if (k < 0) { this.hideTip(); return; }
      var S = D.states.list[k];
      this.tipAt(p, ev, function (t) {
        html('b', null, 'allocator state at ' + fmtS(at), t);
        html('div', 'msv-dim', 'click to open the nearest the page holds: ' + (S.ev < 0 ? 'before the first event' : fmtS(S.t / 1e6)) +
          (S.lab >= 0 ? ' (' + D.strings[S.lab] + ')' : ''), t);
      });
      return;
    }
    var hit = this.pick(p);
    if (!hit || hit.g === -2) { this.hideTip(); return; }
    if (hit.g === -1) {
      this.tipAt(p, ev, function (t) {
        html('b', null, REMAINDER[self.mode] || 'other', t);
        html('div', null, '≈ ' + fmtBytes(hit.h) + ' at ' + fmtS(toT(D, hit.x)), t);
      });
      return;
    }
    var info = this.describe(hit);
    this.tipAt(p, ev, function (t) {
      tipTitle(t, info);
      info.lines.forEach(function (l) { html('div', null, l, t); });
      html('div', 'msv-dim', info.category ? 'click to pin these numbers' : 'click for the stack trace', t);
    });
  };

  View.prototype.click = function (p) {
    var lane = (this.laneHits || []).filter(function (h) { return p[0] >= h.x0 && p[0] < h.x1 && p[1] >= h.y0 && p[1] < h.y1; })[0];
    if (lane) { this.zoom(lane.a, lane.b); return; }
    var P = this.D.plot;
    if (p[1] >= this.iterY - 1 && p[1] <= this.iterY + 7 && p[0] >= P[0] && p[0] < P[0] + P[2]) {
      var it = this.iterAt(toT(this.D, this.xAt(p[0])));
      if (it >= 0) { this.zoom(toU(this.D, this.D.it[it][0]), toU(this.D, this.D.it[it][1])); return; }
    }
    if (this.onAxis(p)) {
      var t = toT(this.D, this.xAt(p[0])), k = this.stateNear(t);
      if (k >= 0) this.openState(k, t);
      return;
    }
    var hit = this.pick(p);
    if (hit && hit.g >= 0) this.select(hit);
  };

  /* The time axis under the plot (its tick labels): a click there opens the allocator's
   * state at that time. */
  View.prototype.onAxis = function (p) {
    var P = this.D.plot;
    return !!this.D.states && p[0] >= P[0] && p[0] < P[0] + P[2] && p[1] > this.iterY + 7 && p[1] <= P[1] + P[3] + 42;
  };

  View.prototype.select = function (hit) {
    this.sel = { key: this.describe(hit).key, hit: hit };
    this.drawSel();
    this.showStack(this.describe(hit));
  };

  View.prototype.drawSel = function () {
    var layer = this.selLayer, self = this;
    if (!layer) return;
    while (layer.firstChild) layer.removeChild(layer.firstChild);
    if (!this.sel) return;
    this.shown.forEach(function (s) {
      s.d.groups.forEach(function (g, gi) {
        var key = g.ref >= 0 ? 'a' + g.ref : 's' + g.ref;
        if (key === self.sel.key && s.paths[gi])
          el('path', { d: s.paths[gi], fill: 'none', stroke: self.D.theme.fg, 'stroke-width': 2.5 }, layer);
      });
    });
  };

  /* The stack panel: Python frames as they are, each run of C++ frames folded. */
  View.prototype.showStack = function (info) {
    var D = this.D, box = this.stack;
    while (box.firstChild) box.removeChild(box.firstChild);
    var frames = info.stack >= 0 && D.st[info.stack] ? D.st[info.stack] : [];
    var text = [info.title, fmtBytes(info.size)].concat(frames.map(function (f) {
      var fr = D.fr[f]; return fr ? D.strings[fr[0]] + ':' + lineText(fr[1]) + ' ' + D.strings[fr[2]] : '?';
    }));
    var copy = html('button', null, 'copy', box);
    copy.type = 'button';
    copy.setAttribute('data-memsnap-copy', '');
    copy.addEventListener('click', function () {
      var s = text.join('\n');
      if (navigator.clipboard && navigator.clipboard.writeText) navigator.clipboard.writeText(s).catch(function () { fallback(s); });
      else fallback(s);
      copy.textContent = 'copied';
    });
    html('h4', null, info.title, box);
    info.lines.forEach(function (l) { html('p', 'msv-meta', l, box); });
    if (info.note) { html('p', 'msv-meta', info.note, box); return; }
    if (!frames.length) { html('p', 'msv-meta', 'No stack was recorded for this allocation.', box); return; }
    var ol = html('ol', null, null, box), i = 0;
    while (i < frames.length) {
      var fr = D.fr[frames[i]];
      if (fr && isPy(D.strings[fr[0]])) { frameItem(ol, D, fr); i++; continue; }
      var j = i;
      while (j < frames.length && !(D.fr[frames[j]] && isPy(D.strings[D.fr[frames[j]][0]]))) j++;
      var li = html('li', null, null, ol), det = html('details', null, null, li);
      html('summary', null, (j - i) + ' C++ frame' + (j - i === 1 ? '' : 's'), det);
      var inner = html('ol', null, null, det);
      for (var k = i; k < j; k++) if (D.fr[frames[k]]) frameItem(inner, D, D.fr[frames[k]]);
      i = j;
    }
  };

  function frameItem(ol, D, fr) {
    var li = html('li', null, null, ol);
    li.setAttribute('data-memsnap-frame', '');
    html('span', null, D.strings[fr[0]] + ':' + lineText(fr[1]) + ' ', li);
    html('span', 'fn', D.strings[fr[2]], li);
  }

  /* memsnap writes -1 for a frame whose line the snapshot did not give. */
  function lineText(n) { return n < 0 ? '?' : String(n); }

  function fallback(s) {
    var ta = document.createElement('textarea');
    ta.value = s;
    document.body.appendChild(ta);
    ta.select();
    try { document.execCommand('copy'); } catch (e) { /* nothing else to try */ }
    document.body.removeChild(ta);
  }


  /* ---------------------------------------------------------------- allocator states */

  /* The states the page embeds (docs/view.md, "Allocator states"), decoded when first
   * shown: segments with their row, x and address, blocks tiling them in order. */
  function decodeState(D, S) {
    if (S.d) return S.d;
    var s = uvarints(S.s), b = uvarints(S.b), segs = [], p = 0, q = 0, addr = 0;
    while (p + 6 < s.length) {
      addr += s[p + 2];
      var g = { row: s[p], x: s[p + 1] / 4, addr: addr, size: s[p + 3], small: !!(s[p + 4] & 1),
                exp: !!(s[p + 4] & 2), stream: D.strings[s[p + 6]], blocks: [] };
      var nb = s[p + 5], a = addr;
      p += 7;
      for (var k = 0; k < nb && q < b.length; k++) {
        var bl = { addr: a, size: b[q], state: b[q + 1] & 3, rebuilt: !!(b[q + 1] & 4), est: !!(b[q + 1] & 8) };
        q += 2;
        if (bl.state) { bl.req = b[q]; bl.stack = b[q + 1] - 1; bl.site = b[q + 2] - 1; bl.cat = b[q + 3] - 1; q += 4; }
        a += bl.size;
        g.blocks.push(bl);
      }
      segs.push(g);
    }
    S.d = segs;
    return segs;
  }

  /* The embedded state nearest to a time (seconds since the first event). */
  View.prototype.stateNear = function (t) {
    var L = this.D.states ? this.D.states.list : [], best = -1, bd = Infinity;
    for (var i = 0; i < L.length; i++) {
      var d = Math.abs(L[i].t / 1e6 - t);
      if (d < bd) { bd = d; best = i; }
    }
    return best;
  };

  var STATE_NAMES = ['free', 'allocated', 'pending free (freed, waiting for its streams)'];

  View.prototype.openState = function (i, askedT) {
    var D = this.D, SS = D.states, S = SS.list[i], pane = this.statePane, self = this;
    var segs = decodeState(D, S);
    while (pane.firstChild) pane.removeChild(pane.firstChild);
    pane.hidden = false;
    pane.setAttribute('data-memsnap-state-event', String(S.ev));
    pane.setAttribute('data-memsnap-state-time', String(S.t / 1e6));
    var when = S.ev < 0 ? 'before the first event' : fmtS(S.t / 1e6) + ' (event ' + S.ev + ')';
    html('h4', null, 'Allocator state' + (S.lab >= 0 ? ' at the ' + D.strings[S.lab] : '') + ': ' + when, pane);
    html('p', 'msv-meta', 'reserved ' + fmtBytes(S.res) + ' in ' + S.nseg + ' segment' + (S.nseg === 1 ? '' : 's') +
      ' · allocated ' + fmtBytes(S.al) + ' · free inside reserved segments ' + fmtBytes(S.fr) + ' in ' + S.nf +
      ' block' + (S.nf === 1 ? '' : 's') + ', largest ' + fmtBytes(S.big) +
      (segs.length < S.nseg ? ' · showing the ' + segs.length + ' segments with the most free memory' : ''), pane);
    if (S.ap) html('p', 'msv-meta', 'approximate: ' + D.strings[S.note], pane);
    /* Said only when the state is more than a pixel away from the click. */
    var pixel = (toT(D, this.v1) - toT(D, this.v0)) / D.plot[2];
    if (askedT !== undefined && Math.abs(askedT - S.t / 1e6) > pixel)
      html('p', 'msv-meta', 'You clicked ' + fmtS(askedT) + ': this is the nearest of the ' + SS.list.length +
        ' states this page holds (memsnap segments FILE --at SECONDS gives any instant).', pane);
    var bar = html('div', null, null, pane);
    SS.list.forEach(function (T, k) {
      if (T.lab < 0) return;
      var btn = html('button', null, D.strings[T.lab], bar);
      btn.type = 'button';
      btn.setAttribute('data-memsnap-state-button', D.strings[T.lab]);
      btn.setAttribute('aria-pressed', k === i ? 'true' : 'false');
      btn.addEventListener('click', function () { self.openState(k); });
    });
    var W = D.area[0], rh = SS.rh, rg = SS.rg, x0 = SS.x, rows = S.rows;
    var H = 8 + rows * (rh + rg) + 22;
    var svg = el('svg', { viewBox: '0 0 ' + W + ' ' + H, role: 'presentation' }, pane);
    this.stateSvg = svg;
    var defs = el('defs', {}, svg), pid = this.root.id + '-hatch';
    var pat = el('pattern', { id: pid, width: 6, height: 6, patternUnits: 'userSpaceOnUse', patternTransform: 'rotate(45)' }, defs);
    el('rect', { width: 6, height: 6, fill: '#fff' }, pat);
    el('path', { d: 'M0 0V6', stroke: '#b8b8c2', 'stroke-width': 1.2 }, pat);
    var rowsMode = segs.length && segs.every(function (g, k) { return g.row === k; });
    segs.forEach(function (g) {
      var y = 4 + g.row * (rh + rg), gx = x0 + g.x, gw = Math.max(2, g.size * S.ppb);
      var scale = gw / g.size;
      if (rowsMode || g.x === 0) {
        var lt = el('text', { x: x0 - 6, y: y + rh - 3, 'font-size': 10, 'text-anchor': 'end', fill: D.theme.muted }, svg);
        lt.textContent = rowsMode ? fmtBytes(g.size) + ' ' + (g.small ? 'small' : 'large') + (g.exp ? ' exp' : '')
                                  : '0x' + g.addr.toString(16);
      }
      var gg = el('g', { 'data-memsnap-segment': String(g.addr) }, svg);
      g.blocks.forEach(function (bl) {
        var bx = gx + (bl.addr - g.addr) * scale, bw = Math.max(0.5, bl.size * scale);
        var fill = bl.state === 0 ? 'url(#' + pid + ')' : bl.state === 2 ? '#ed9ecc'
                 : bl.cat >= 0 && SS.cat[bl.cat] ? D.strings[SS.cat[bl.cat][0]] : '#5a8ccc';
        var r = el('rect', { x: bx, y: y, width: bw, height: rh, fill: fill }, gg);
        if (bl.state === 2) { r.setAttribute('stroke', D.theme.fg); r.setAttribute('stroke-dasharray', '2 2'); r.setAttribute('stroke-width', 0.8); }
        r.setAttribute('data-memsnap-block', String(bl.addr));
        bl.el = r;
        bl.seg = g;
      });
      el('rect', { x: gx + 0.5, y: y + 0.5, width: Math.max(1, gw - 1), height: rh - 1, fill: 'none', stroke: D.theme.fg, 'stroke-width': 0.8, 'pointer-events': 'none' }, svg);
    });
    /* Colours: the categories the blocks have, pending, free. */
    var lx = x0, ly = H - 8, seen = {};
    segs.forEach(function (g) { g.blocks.forEach(function (bl) { if (bl.state && bl.cat >= 0) seen[bl.cat] = 1; }); });
    var keys = Object.keys(seen).map(Number).sort(function (a, b) { return a - b; }).map(function (c) {
      return [D.strings[SS.cat[c][0]], SS.cat[c][1] >= 0 ? D.strings[SS.cat[c][1]].replace(/_/g, ' ') : '?'];
    }).concat([['#ed9ecc', 'pending free'], ['url(#' + pid + ')', 'free']]);
    keys.forEach(function (k) {
      el('rect', { x: lx, y: ly - 9, width: 10, height: 10, fill: k[0], stroke: D.theme.fg, 'stroke-width': 0.6 }, svg);
      var t = el('text', { x: lx + 14, y: ly, 'font-size': 10.5, fill: D.theme.fg }, svg);
      t.textContent = k[1];
      lx += 14 + k[1].length * 6.2 + 12;
    });
    this.stateShown = { S: S, segs: segs };
    svg.addEventListener('mousemove', function (ev) { self.hoverBlock(ev); });
    svg.addEventListener('mouseleave', function () { self.hideTip(); });
    svg.addEventListener('click', function (ev) { var bl = self.blockAt(ev); if (bl && bl.state) self.showStack(self.blockInfo(bl)); });
  };

  /* The x (viewBox units) of a time in seconds since the first event, for tests. */
  View.prototype.pxOfTime = function (t) { return this.px(toU(this.D, t)); };

  View.prototype.blockAt = function (ev) {
    var t = ev.target, st = this.stateShown;
    if (!st || !t || !t.getAttribute || t.getAttribute('data-memsnap-block') === null) return null;
    var addr = Number(t.getAttribute('data-memsnap-block'));
    for (var i = 0; i < st.segs.length; i++) {
      var g = st.segs[i];
      if (addr < g.addr || addr >= g.addr + g.size) continue;
      for (var k = 0; k < g.blocks.length; k++) if (g.blocks[k].addr === addr) return g.blocks[k];
    }
    return null;
  };

  /* What a block holds, for its tooltip and the stack panel. */
  View.prototype.blockInfo = function (bl) {
    var D = this.D, SS = D.states, out = { lines: [], stack: -1 };
    if (!bl.state) {
      out.title = 'free (' + bl.size + ' bytes)';
      out.size = bl.size;
      out.lines.push(fmtBytes(bl.size) + ' free inside a ' + fmtBytes(bl.seg.size) + ' ' + (bl.seg.small ? 'small' : 'large') + ' segment');
    } else {
      out.title = bl.site >= 0 ? D.strings[bl.site] : '(no stack recorded)';
      out.site = true;
      out.size = bl.size;
      out.stack = bl.stack;
      out.lines.push(fmtBytes(bl.size) + ' block · ' + fmtBytes(bl.req) + ' requested · ' + STATE_NAMES[bl.state]);
      if (bl.cat >= 0 && SS.cat[bl.cat] && SS.cat[bl.cat][1] >= 0) out.lines.push('category: ' + D.strings[SS.cat[bl.cat][1]].replace(/_/g, ' '));
      if (bl.rebuilt) out.lines.push('alive before the trace began: rebuilt from the final segments' + (bl.est ? ', size inferred' : ''));
    }
    out.lines.push('at 0x' + bl.addr.toString(16) + ' · stream ' + bl.seg.stream);
    return out;
  };

  View.prototype.hoverBlock = function (ev) {
    var bl = this.blockAt(ev);
    if (!bl) { this.hideTip(); return; }
    var info = this.blockInfo(bl);
    this.tipAt(null, ev, function (t) {
      var b = html('b', null, info.title, t);
      b.setAttribute('data-memsnap-block-info', String(bl.addr));
      if (info.site) b.setAttribute('data-memsnap-site', info.title);
      info.lines.forEach(function (l) { html('div', null, l, t); });
      if (info.site) html('div', 'msv-dim', 'click for the stack trace', t);
    });
  };

  /* ---------------------------------------------------------------- keyboard */

  View.prototype.key = function (ev) {
    var w = this.v1 - this.v0, m = (this.v0 + this.v1) / 2, k = ev.key;
    if (k === 'ArrowLeft') this.zoom(this.v0 - w / 4, this.v1 - w / 4);
    else if (k === 'ArrowRight') this.zoom(this.v0 + w / 4, this.v1 + w / 4);
    else if (k === '+' || k === '=') this.zoom(m - w / 4, m + w / 4);
    else if (k === '-' || k === '_') this.zoom(m - w, m + w);
    else if (k === 'Escape' || k === '0') { this.zoom(0, this.D.full); this.hideTip(); }
    else if (k === 'ArrowUp' || k === 'ArrowDown') this.moveFocus(k === 'ArrowUp' ? 1 : -1);
    else if (k === 'Enter' || k === ' ') { if (this.focus) this.select(this.focus); }
    else return;
    ev.preventDefault();
  };

  /* Keyboard focus walks the bands of the column under the view's centre. */
  View.prototype.moveFocus = function (dir) {
    var P = this.D.plot, x = (this.v0 + this.v1) / 2, s = null;
    for (var i = 0; i < this.shown.length; i++) if (x >= this.shown[i].T.x0 && x <= this.shown[i].T.x1) s = this.shown[i];
    if (!s) return;
    var c = Math.min(this.D.cols - 1, Math.floor((x - s.T.x0) / s.d.dx)), present = [];
    s.d.groups.forEach(function (g, gi) { if (runValue(g.runs, c) > 0) present.push(gi); });
    if (!present.length) return;
    var at = this.focus ? present.indexOf(this.focus.g) : -1;
    at = at < 0 ? (dir > 0 ? 0 : present.length - 1) : Math.max(0, Math.min(present.length - 1, at + dir));
    var g = present[at], below = bytesAt(s.d.groups, g, c, false), h = runValue(s.d.groups[g].runs, c);
    this.focus = { s: s, c: c, g: g, x: x, below: below, h: h };
    var p = [this.px(x), this.py(below + h / 2)], info = this.describe(this.focus);
    this.sel = { key: info.key };
    this.drawSel();
    this.tipAt(p, null, function (t) {
      tipTitle(t, info);
      info.lines.forEach(function (l) { html('div', null, l, t); });
      html('div', 'msv-dim', info.category ? 'Enter: pin these numbers' : 'Enter: pin the stack trace', t);
    });
  };

  /* ---------------------------------------------------------------- start */

  function start() {
    var roots = document.querySelectorAll('[data-memsnap-view]'), views = [];
    for (var i = 0; i < roots.length; i++) {
      var src = document.getElementById(roots[i].getAttribute('data-memsnap-view'));
      if (!src) continue;
      try {
        views.push(new View(roots[i], JSON.parse(src.textContent)));
      } catch (e) {
        roots[i].textContent = 'The interactive chart could not be drawn: ' + e;
      }
    }
    window.memsnapViews = views;
    window.memsnapDrawnAt = performance.now();
    document.documentElement.setAttribute('data-memsnap-ready', String(views.length));
  }
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
  else start();
})();
