"""Check the built book's internal links and anchors, and the README's relative links.

    python3 .ci/book-links.py BOOK_DIR README.md

Every <a href> of every page of BOOK_DIR that is relative must name a file of the book, and its #fragment an id
of that file; the README's Markdown links must name files of the repository, and a #fragment into a Markdown
file a heading of it (as GitHub makes ids). Every `code span` of the book's sources and of the repository's
top-level pages that names a path of the repository (it starts with one of its top-level folders, such as
`src/` or `deploy/`) must name one that exists, or one the running program makes and git ignores
(`certs/demo/`). A path under docs/ that the code, tests, manifests or scripts name must exist too. Prints each
broken link or path; exit 1 when there is one.
"""

import glob
import html.parser
import os
import re
import subprocess
import sys
import urllib.parse


class Page(html.parser.HTMLParser):
    """The ids and the hrefs of one HTML page."""

    def __init__(self):
        super().__init__()
        self.ids, self.hrefs = set(), []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if attrs.get("id"):
            self.ids.add(attrs["id"])
        if tag == "a" and attrs.get("href"):
            self.hrefs.append((attrs["href"], self.getpos()[0]))


def external(href):
    return urllib.parse.urlsplit(href).scheme != "" or href.startswith("//")


def check_book(book):
    pages = {}
    for folder, _, files in os.walk(book):
        for name in files:
            if name.endswith(".html"):
                path = os.path.join(folder, name)
                page = Page()
                with open(path, encoding="utf-8") as f:
                    page.feed(f.read())
                pages[os.path.normpath(path)] = page
    broken = []
    for path, page in sorted(pages.items()):
        # mdBook's own pages (print view, 404, search, toc) link the same pages as the chapters.
        for href, line in page.hrefs:
            if external(href):
                continue
            target, _, fragment = href.partition("#")
            target = urllib.parse.unquote(target)
            dest = os.path.normpath(os.path.join(os.path.dirname(path), target)) if target else path
            if os.path.isdir(dest):
                dest = os.path.join(dest, "index.html")
            where = f"{os.path.relpath(path, book)}:{line}: {href}"
            if not os.path.exists(dest):
                broken.append(f"{where}: no such file in the book")
            elif fragment and dest in pages and fragment not in pages[dest].ids:
                broken.append(f"{where}: no id {fragment!r} on {os.path.relpath(dest, book)}")
    return broken, len(pages)


def github_id(heading):
    heading = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return heading.replace(" ", "-")


def check_readme(readme):
    root = os.path.dirname(os.path.abspath(readme))
    broken = []
    with open(readme, encoding="utf-8") as f:
        text = f.read()
    for match in re.finditer(r"\]\(([^)\s]+)\)", text):
        href = match.group(1)
        line = text.count("\n", 0, match.start()) + 1
        if external(href):
            continue
        target, _, fragment = href.partition("#")
        dest = os.path.join(root, target) if target else os.path.abspath(readme)
        if not os.path.exists(dest):
            broken.append(f"{readme}:{line}: {href}: no such file")
        elif fragment and dest.endswith(".md"):
            with open(dest, encoding="utf-8") as f:
                ids = {github_id(m.group(1)) for m in re.finditer(r"^#+ (.*)$", f.read(), re.M)}
            if fragment not in ids:
                broken.append(f"{readme}:{line}: {href}: no heading makes #{fragment}")
    return broken


def ignored(root, path):
    """Whether git ignores `path` (as a file or as a folder): something cordon makes at run time."""
    return any(
        subprocess.run(["git", "-C", root, "check-ignore", "-q", p]).returncode == 0 for p in (path, path + "/")
    )


def check_paths(sources, readme):
    """Code spans naming repository paths that do not exist: a file moved or renamed under the docs."""
    root = os.path.dirname(os.path.abspath(readme))
    tops = tuple(
        name + "/"
        for name in os.listdir(root)
        if os.path.isdir(os.path.join(root, name)) and name not in (".git", "target")
    )
    # The book's sources and the repository's own top-level pages (README, BENCHMARKS, RELIABILITY).
    pages = sorted(glob.glob(os.path.join(sources, "**", "*.md"), recursive=True))
    pages += sorted(glob.glob(os.path.join(root, "*.md")))
    broken = []
    for page in pages:
        with open(page, encoding="utf-8") as f:
            text = f.read()
        # Fenced blocks hold commands and files, whose paths are often ones the reader makes.
        prose = re.sub(r"```.*?```", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
        for match in re.finditer(r"`([^`\s]+)`", prose):
            path = match.group(1)
            if not path.startswith(tops):
                continue
            # A line (`src/lib.rs:12`) or an anchor after the path; a placeholder (`<target>`) stands for any name.
            path = re.sub(r"(:\d+(-\d+)?|#.*)$", "", path)
            pattern = re.sub(r"<[^>]*>", "*", path)
            if glob.glob(os.path.join(root, pattern)) or ignored(root, path):
                continue
            line = prose.count("\n", 0, match.start()) + 1
            broken.append(f"{os.path.relpath(page, root)}:{line}: `{match.group(1)}`: no such path in the repository")
    return broken


def check_docs_named_by_code(readme):
    """Paths under docs/ that the code, tests, manifests and scripts name (in comments, help texts and log
    hints) and that do not exist: a page moved or renamed under them."""
    root = os.path.dirname(os.path.abspath(readme))
    named = re.compile(r"(?<![\w/.-])docs/[\w./-]*\w\.(?:md|yaml|json|toml|svg|dot)\b")
    broken = []
    for top in ("src", "tests", "deploy", ".ci", "config", "benches", "fuzz", "crates", "build.rs", "Cargo.toml"):
        base = os.path.join(root, top)
        files = [base] if os.path.isfile(base) else [
            os.path.join(folder, name)
            for folder, dirs, names in os.walk(base)
            if "/target" not in folder and "/corpus" not in folder and "/artifacts" not in folder
            for name in names
        ]
        for path in sorted(files):
            try:
                with open(path, encoding="utf-8") as f:
                    text = f.read()
            except (UnicodeDecodeError, OSError):
                continue
            for match in named.finditer(text):
                # A word in capitals (`docs/src/img/NAME.dot`) stands for any name.
                pattern = re.sub(r"\b[A-Z][A-Z_]+\b", "*", match.group(0))
                if not glob.glob(os.path.join(root, pattern)):
                    line = text.count("\n", 0, match.start()) + 1
                    broken.append(f"{os.path.relpath(path, root)}:{line}: {match.group(0)}: no such file")
    return broken


def main():
    book, readme = sys.argv[1], sys.argv[2]
    broken, n = check_book(book)
    broken += check_readme(readme)
    broken += check_paths(os.path.join(os.path.dirname(os.path.abspath(book)), "src"), readme)
    broken += check_docs_named_by_code(readme)
    for b in broken:
        print(b)
    if broken:
        print(f"{len(broken)} broken link(s) or path(s)")
        sys.exit(1)
    print(
        f"book: {n} pages, every internal link and anchor lands; README: every relative link lands; "
        "every repository path the docs name, and every docs/ path the code names, exists"
    )


if __name__ == "__main__":
    main()
