#!/usr/bin/env python3
"""Check that what the sources say about the documentation exists.

  * In source files (C, C++, Python, Cap'n Proto, shell, CMake and its templates, Markdown),
    every mention of docs/NAME.md must name a file of docs/, and when a quoted section title
    follows it (docs/security.md, "Limits") that file must have a heading with that title. A
    mention of the README by a section title (README.md, "Quick start") must name a heading
    of README.md.
  * In README.md and docs/*.md, every relative link must lead to a file that exists, and its
    #anchor to a heading of that file (GitHub's anchors).

Exit status 0 when every reference holds, 1 otherwise (each bad one is printed as FILE:LINE).

usage: check-references.py [--source DIR]    (default: the tree holding this script)
"""
import argparse
import os
import re
import sys

SOURCE_SUFFIXES = (".c", ".h", ".cc", ".py", ".capnp", ".sh", ".cmake", ".in", ".md")
SOURCE_NAMES = ("CMakeLists.txt",)
DOC_REF = re.compile(r'(?<![\w/.-])docs/([\w.-]+\.md)(#[\w-]+)?(,?\s*"([^"\n]*)("?))?')
README_REF = re.compile(r'(?<![\w/.-])README(?:\.md)?,?\s*"([^"\n]*)("?)')
MD_LINK = re.compile(r'\]\(([^)\s]+)\)')


def slug(title):
    """The anchor GitHub gives a heading."""
    s = title.strip().lower().replace("`", "")
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")


def headings(path, cache={}):
    """{title, as written without backticks} and {anchor} of a Markdown file, code excluded."""
    if path not in cache:
        titles, anchors, seen = set(), set(), {}
        fence = False
        for line in open(path, encoding="utf-8"):
            if line.startswith("```"):
                fence = not fence
                continue
            m = None if fence else re.match(r"#{1,6} (.*?)\s*#*\s*$", line)
            if m:
                title = m.group(1).replace("`", "")
                titles.add(title)
                anchor = slug(m.group(1))
                n = seen.get(anchor, 0)
                seen[anchor] = n + 1
                anchors.add(anchor if n == 0 else "%s-%d" % (anchor, n))
        cache[path] = (titles, anchors)
    return cache[path]


def source_files(source):
    for root, dirs, files in os.walk(source):
        # Hidden folders (.git, ...) and build trees (they hold generated copies) are not sources.
        # tools/docs/ (these scripts) names documents only as examples.
        dirs[:] = sorted(d for d in dirs if not d.startswith(".")
                         and not os.path.exists(os.path.join(root, d, "CMakeCache.txt"))
                         and os.path.join(root, d) != os.path.join(source, "tools", "docs"))
        for f in sorted(files):
            if f.endswith(SOURCE_SUFFIXES) or f in SOURCE_NAMES:
                yield os.path.join(root, f)


def check_text_references(source, path, rel, text, bad):
    docs = os.path.join(source, "docs")
    for number, line in enumerate(text.splitlines(), 1):
        for m in DOC_REF.finditer(line):
            name, anchor, quoted, title, closed = m.groups()
            target = os.path.join(docs, name)
            where = "%s:%d: docs/%s" % (rel, number, name)
            if not os.path.isfile(target):
                bad.append("%s: no such document" % where)
                continue
            titles, anchors = headings(target)
            if anchor and anchor[1:] not in anchors:
                bad.append("%s%s: no such heading" % (where, anchor))
            if quoted and not closed:
                bad.append('%s, "%s: put the section title on the same line' % (where, title))
            elif quoted and title.replace("`", "") not in titles:
                bad.append('%s, "%s": no heading with that title (headings: %s)'
                           % (where, title, "; ".join(sorted(titles))))
        for m in README_REF.finditer(line):
            title, closed = m.groups()
            titles, _ = headings(os.path.join(source, "README.md"))
            if not closed:
                bad.append('%s:%d: README "%s: put the section title on the same line'
                           % (rel, number, title))
            elif title.replace("`", "") not in titles:
                bad.append('%s:%d: README, "%s": README.md has no such heading (the manual is in '
                           'docs/: name a document and its section)' % (rel, number, title))


def check_links(source, path, rel, text, bad):
    fence = False
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith("```"):
            fence = not fence
        if fence:
            continue
        for m in MD_LINK.finditer(line):
            target = m.group(1)
            if re.match(r"[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
                continue
            file_part, _, anchor = target.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) \
                if file_part else path
            if not os.path.exists(dest):
                bad.append("%s:%d: link to %s: no such file" % (rel, number, target))
                continue
            if anchor and dest.endswith(".md") and anchor not in headings(dest)[1]:
                bad.append("%s:%d: link to %s: no heading with that anchor" % (rel, number, target))


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description="Check references to the documentation.")
    ap.add_argument("--source", default=os.path.dirname(os.path.dirname(here)))
    args = ap.parse_args()
    source = os.path.abspath(args.source)
    bad, files = [], 0
    for path in source_files(source):
        rel = os.path.relpath(path, source)
        text = open(path, encoding="utf-8", errors="replace").read()
        files += 1
        check_text_references(source, path, rel, text, bad)
        if rel == "README.md" or (rel.startswith("docs" + os.sep) and rel.endswith(".md")):
            check_links(source, path, rel, text, bad)
    if files < 50 or not os.path.isdir(os.path.join(source, "docs")):
        print("FAIL: only %d source files under %s: the check itself is broken" % (files, source))
        return 1
    for line in bad:
        print("FAIL " + line)
    if bad:
        print("%d bad reference(s) in %d files: point them at a document of docs/ and one of its "
              "headings (tools/docs/check-references.py)" % (len(bad), files))
        return 1
    print("ok: every reference to docs/ and README.md in %d files holds" % files)
    return 0


if __name__ == "__main__":
    sys.exit(main())
