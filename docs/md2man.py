#!/usr/bin/env python3
"""Turns docs/memsnap.1.md into the roff man page memsnap.1 (CMake runs it at build time,
so the two never disagree; tests/cli/man.sh renders the result with warnings on).

It handles the Markdown that page uses, and refuses anything else rather than print it
wrong:
  # name(1)                     the title line (.TH)
  ## SECTION                    .SH
  paragraphs                    .PP, lines joined
  ``` fenced blocks ```         verbatim, indented (.nf)
  | a | b | tables              one tagged paragraph per row (.TP), header row dropped;
                                \\| is a literal bar inside a cell
  - item, continuation indented bullet list (.IP)
  ![alt](file.png)              left out (a terminal shows no pictures)
  `code`, **bold**              bold (man pages show literal text in bold)
Everything that roff would read as a request or escape is escaped: a backslash, a line
starting with . or ', and every non-ASCII character (written \\[uXXXX], so no input
encoding is assumed).

usage: md2man.py [--version V] INPUT.md OUTPUT.1
"""
import re
import sys


class MarkdownError(Exception):
    pass


def roff_chars(text):
    """Escapes plain text for roff (not yet inline markup)."""
    out = []
    for ch in text:
        if ch == "\\":
            out.append("\\e")
        elif ch == "-":
            out.append("\\-")  # an ASCII hyphen-minus, as options need for copy and paste
        elif ord(ch) > 126:
            out.append("\\[u%04X]" % ord(ch))
        else:
            out.append(ch)
    return "".join(out)


def inline(text):
    """Markdown inline markup to roff: `code` and **bold** become bold."""
    parts = re.split(r"(`[^`]*`)", text)
    out = []
    for part in parts:
        if len(part) >= 2 and part.startswith("`") and part.endswith("`"):
            out.append("\\fB" + roff_chars(part[1:-1]) + "\\fR")
            continue
        if "`" in part:
            raise MarkdownError("unbalanced backtick in: " + text)
        bold = re.split(r"(\*\*[^*]+\*\*)", part)
        for b in bold:
            if b.startswith("**") and b.endswith("**") and len(b) > 4:
                out.append("\\fB" + inline_plain(b[2:-2]) + "\\fR")
            else:
                if "**" in b:
                    raise MarkdownError("unbalanced ** in: " + text)
                out.append(inline_plain(b))
    return "".join(out)


def inline_plain(text):
    return roff_chars(text)


def text_line(line):
    """A roff text line: one starting with . or ' would be read as a request."""
    line = line.strip()
    if line.startswith(".") or line.startswith("'"):
        line = "\\&" + line
    return line


def split_row(line):
    """Cells of a table row; \\| is a literal bar."""
    line = line.strip()
    if not (line.startswith("|") and line.endswith("|")):
        raise MarkdownError("table row must start and end with |: " + line)
    cells, cur, i = [], [], 1
    while i < len(line) - 1:
        if line[i] == "\\" and line[i + 1] == "|":
            cur.append("|")
            i += 2
            continue
        if line[i] == "|":
            cells.append("".join(cur).strip())
            cur = []
        else:
            cur.append(line[i])
        i += 1
    cells.append("".join(cur).strip())
    return cells


IMAGE = re.compile(r"!\[[^\]]*\]\([^)]*\)")


def convert(md, version):
    lines = md.split("\n")
    out = []
    i = 0
    title = None
    section = None

    def paragraph(text):
        text = IMAGE.sub("", text).strip()
        if not text:
            return
        if "](" in text or "![" in text:
            raise MarkdownError("links are not supported: " + text)
        if section == "NAME":
            # whatis and apropos want "name \- description".
            name, sep, desc = text.partition(" — ")
            if not sep:
                raise MarkdownError("NAME must read 'name — description'")
            out.append(text_line(roff_chars(name) + " \\- " + inline(desc)))
            return
        out.append(".PP")
        out.append(text_line(inline(text)))

    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        if not stripped:
            i += 1
            continue
        if title is None:
            m = re.match(r"^# ([A-Za-z0-9_.-]+)\((\d)\)\s*$", line)
            if not m:
                raise MarkdownError("the first line must be '# name(section)'")
            title = m.group(1)
            out.append('.\\" Generated from docs/memsnap.1.md by docs/md2man.py; edit those.')
            out.append('.TH %s %s "" "%s %s" "User Commands"'
                       % (title.upper(), m.group(2), title, version))
            out.append(".ad l")  # no stretched spaces, no hyphenated option names
            out.append(".nh")
            i += 1
            continue
        if line.startswith("# "):
            raise MarkdownError("only one '# ' title line: " + line)
        if line.startswith("## "):
            section = line[3:].strip()
            out.append(".SH " + roff_chars(section.upper()))
            i += 1
            continue
        if line.startswith("#"):
            raise MarkdownError("headings below ## are not supported: " + line)
        if stripped.startswith("```"):
            i += 1
            out.append(".PP")
            out.append(".RS 2")
            out.append(".nf")
            while i < len(lines) and not lines[i].strip().startswith("```"):
                code = roff_chars(lines[i].rstrip())
                out.append("\\&" + code if code else "")
                i += 1
            if i == len(lines):
                raise MarkdownError("unterminated ``` block")
            out.append(".fi")
            out.append(".RE")
            i += 1
            continue
        if stripped.startswith("|"):
            rows = []
            while i < len(lines) and lines[i].strip().startswith("|"):
                rows.append(split_row(lines[i]))
                i += 1
            if len(rows) < 2 or not all(re.fullmatch(r":?-+:?", c) for c in rows[1]):
                raise MarkdownError("a table needs a header row and a |---| row")
            width = len(rows[0])
            for k, r in enumerate(rows[2:]):
                if len(r) != width:
                    raise MarkdownError("table row with %d cells, header has %d: %s"
                                        % (len(r), width, " | ".join(r)))
                out.append(".TP 7" if k == 0 else ".TP")  # not a list's indent
                out.append(text_line(inline(r[0])))
                out.append(text_line(inline("; ".join(c for c in r[1:] if c))))
            continue
        if stripped.startswith("- ") or stripped.startswith("* "):
            while i < len(lines) and (lines[i].lstrip().startswith(("- ", "* "))):
                item = [lines[i].strip()[2:]]
                i += 1
                while i < len(lines) and lines[i].startswith("  ") and lines[i].strip() \
                        and not lines[i].lstrip().startswith(("- ", "* ")):
                    item.append(lines[i].strip())
                    i += 1
                out.append(".IP \\(bu 2")
                out.append(text_line(inline(" ".join(item))))
                while i < len(lines) and not lines[i].strip() and i + 1 < len(lines) \
                        and lines[i + 1].lstrip().startswith(("- ", "* ")):
                    i += 1
            continue
        if re.match(r"^\s*\d+\. ", line) or line.startswith(">"):
            raise MarkdownError("numbered lists and quotes are not supported: " + line)
        para = []
        while i < len(lines) and lines[i].strip() and not lines[i].startswith("#") \
                and not lines[i].strip().startswith(("```", "|")) \
                and not (para and lines[i].lstrip().startswith(("- ", "* "))):
            para.append(lines[i].strip())
            i += 1
        paragraph(" ".join(para))
    if title is None:
        raise MarkdownError("empty input")
    return "\n".join(out) + "\n"


def main(argv):
    version = ""
    args = argv[1:]
    if len(args) >= 2 and args[0] == "--version":
        version = args[1]
        args = args[2:]
    if len(args) != 2:
        sys.stderr.write("usage: md2man.py [--version V] INPUT.md OUTPUT.1\n")
        return 2
    with open(args[0], encoding="utf-8") as f:
        md = f.read()
    try:
        roff = convert(md, version)
    except MarkdownError as e:
        sys.stderr.write("md2man.py: %s: %s\n" % (args[0], e))
        return 1
    with open(args[1], "w", encoding="ascii") as f:
        f.write(roff)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
