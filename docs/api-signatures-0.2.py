#!/usr/bin/env python3
"""Rewrites calls of the memsnap 0.2 functions whose parameters changed (docs/api.md,
"Signature changes") from the old order to the new one, in place. Run it AFTER
api-renames.sed. Safe to run twice: a call already in the new form is left alone (told
apart by its argument count, or by which argument is an `&address`); a call it cannot
tell is listed on stderr as `file:line: check by hand`, and the compiler flags any left
wrong (incompatible pointer types, too few arguments).

    python3 api-signatures.py FILE.c ...      (declarations and definitions are skipped)

It does not touch the text writers, whose parameters are unchanged but whose return
value is now a length: it lists every call that compares or keeps that value, to check
by hand (docs/api.md, "Text writers").
"""
import re
import sys

# name: (old arity, new arity, new order as old indexes or a literal, how to spot an old call)
# detect: ('arity',) old when the arity is the old one; ('amp', k) old when argument k
# (0-based, old order) starts with '&' and argument 0 does not.
SPECS = {
    'ms_parse_size': (2, 3, [1, 0, 'NULL'], ('arity',)),
    'ms_categories_formula': (3, 4, [2, 0, 1, 'NULL'], ('arity',)),
    'ms_categories_at_event': (3, 4, [2, 0, 1, 'NULL'], ('arity',)),
    'ms_categories_at_time': (3, 4, [2, 0, 1, 'NULL'], ('arity',)),
    'ms_categories_sweep': (5, 6, [0, 1, 2, 3, 4, 'NULL'], ('arity',)),
    'ms_categories_end': (4, 4, [2, 0, 1, 3], ('amp', 2)),
    'ms_categories_phases': (2, 2, [1, 0], ('amp', 1)),
    'ms_heap_usable_free': (5, 5, [3, 4, 0, 1, 2], ('amp', 3)),
    'ms_run_timeline': (3, 3, [1, 0, 2], ('amp', 1)),
    'ms_run_iterations': (3, 3, [1, 0, 2], ('amp', 1)),
    'ms_run_phases': (3, 3, [1, 0, 2], ('amp', 1)),
    'ms_run_categories': (3, 3, [1, 0, 2], ('amp', 1)),
    'ms_run_leaks': (3, 3, [1, 0, 2], ('amp', 1)),
    'ms_run_ooms': (3, 3, [1, 0, 2], ('amp', 1)),
    'ms_run_annotation_ranges': (4, 4, [1, 2, 0, 3], ('amp', 1)),
    'ms_run_frame_classes': (4, 4, [1, 2, 0, 3], ('amp', 1)),
}
WRITERS = ['ms_site_format_location', 'ms_site_format_function', 'ms_site_format',
           'ms_layer_format', 'ms_categories_explain']
DECL = re.compile(r'(^|\n)[ \t]*(MS_API\s+)?(static\s+)?(inline\s+)?(const\s+)?'
                  r'(int|void|size_t|uint64_t|ms_\w+)\s*\*?\s*$')


def code_only(src):
    """src with comments and string/char literals blanked (same length), so that names
    inside them are not taken for calls."""
    out, j, n = list(src), 0, len(src)
    while j < n:
        if src.startswith('/*', j):
            k = src.find('*/', j + 2)
            k = n if k < 0 else k + 2
        elif src.startswith('//', j):
            k = src.find('\n', j)
            k = n if k < 0 else k
        elif src[j] in '"\'':
            k = j + 1
            while k < n and src[k] != src[j] and src[k] != '\n':
                k += 2 if src[k] == '\\' else 1
            k += 1
        else:
            j += 1
            continue
        for q in range(j, min(k, n)):
            if out[q] != '\n':
                out[q] = ' '
        j = k
    return ''.join(out)


def split_args(src, i):
    """src[i] is '('; returns (list of (start, end) of each argument, index of ')')."""
    depth, j, start, spans = 0, i, i + 1, []
    while j < len(src):
        c = src[j]
        if c in '"\'':
            q = c
            j += 1
            while j < len(src) and src[j] != q:
                j += 2 if src[j] == '\\' else 1
        elif src.startswith('/*', j):
            j = src.index('*/', j) + 1
        elif c in '([{':
            depth += 1
        elif c in ')]}':
            depth -= 1
            if depth == 0:
                spans.append((start, j))
                return spans, j
        elif c == ',' and depth == 1:
            spans.append((start, j))
            start = j + 1
        j += 1
    return None, None


def fix(path):
    src = open(path).read()
    out, pos, changed = [], 0, False
    names = '|'.join(sorted(SPECS, key=len, reverse=True))
    code = code_only(src)
    for m in re.finditer(r'\b(' + names + r')\s*\(', code):
        name = m.group(1)
        if m.start() < pos:
            continue
        line_start = src.rfind('\n', 0, m.start()) + 1
        if DECL.search(src[max(0, line_start - 1):m.start()]):
            continue  # a declaration or definition
        spans, close = split_args(src, m.end() - 1)
        if spans is None:
            continue
        args = [src[a:b].strip() for a, b in spans]
        if args == ['']:
            continue  # `name()` in a comment
        old_n, new_n, order, detect = SPECS[name]
        lineno = src.count('\n', 0, m.start()) + 1
        if detect[0] == 'arity':
            if len(args) == new_n:
                continue
            is_old = len(args) == old_n
        else:
            k = detect[1]
            if len(args) != old_n:
                is_old = False
            elif args[0].startswith('&'):
                continue
            else:
                is_old = args[k].startswith('&')
        if not is_old:
            print(f'{path}:{lineno}: {name}: check by hand', file=sys.stderr)
            continue
        new = [a if isinstance(a, str) else args[a] for a in order]
        col = m.end() - line_start
        text = ', '.join(new)
        if col + len(text) + 2 > 100:  # wrap at commas, aligned under the '('
            lines, cur = [], ''
            for a in new:
                piece = (cur + ', ' if cur else '') + a
                if cur and col + len(piece) + 2 > 100:
                    lines.append(cur + ',')
                    cur = a
                else:
                    cur = piece
            lines.append(cur)
            text = ('\n' + ' ' * col).join(lines)
        out.append(src[pos:m.end()])
        out.append(text)
        pos = close
        changed = True
    out.append(src[pos:])
    if changed:
        open(path, 'w').write(''.join(out))
    code = code_only(src)
    for m in re.finditer(r'\b(' + '|'.join(WRITERS) + r')\s*\(', code):
        line_start = src.rfind('\n', 0, m.start()) + 1
        if DECL.search(src[max(0, line_start - 1):m.start()]):
            continue
        spans, close = split_args(src, m.end() - 1)
        if spans is None:
            continue
        before = src[line_start:m.start()]
        after = src[close + 1:close + 8].lstrip()
        if before.strip() not in ('', 'return') or not after.startswith(';'):
            lineno = src.count('\n', 0, m.start()) + 1
            print(f'{path}:{lineno}: {m.group(1)} returns a length now (was 0 or <0): '
                  'check by hand', file=sys.stderr)


if __name__ == '__main__':
    for p in sys.argv[1:]:
        fix(p)
