#!/usr/bin/env bash
# .ci/book.sh: build the book (docs/, mdBook) and check every link and anchor in it.
#
#   bash .ci/book.sh          (exit 0 when the book builds and every internal link lands; 1 naming each that does not)
#
# mdbook comes from the crate registry, pinned, installed under $CORDON_TOOLS (cached between runs). The check
# reads the built HTML with Python's html.parser: every relative href must name a file of the built book (or of
# the repository, for the README's links), and every #fragment an id on that page. The README's links are
# checked on the Markdown itself, since GitHub, not mdBook, renders it.
set -euo pipefail
cd "$(dirname "$0")/.."

MDBOOK_VERSION=0.5.4
CORDON_TOOLS="${CORDON_TOOLS:-$HOME/.cache/cordon-tools}"
if ! "$CORDON_TOOLS/bin/mdbook" --version 2>/dev/null | grep -q "v$MDBOOK_VERSION"; then
  cargo install --quiet --locked --root "$CORDON_TOOLS" mdbook --version "$MDBOOK_VERSION"
fi
rm -rf docs/book
"$CORDON_TOOLS/bin/mdbook" build docs 2>&1 | grep -v ' INFO ' || true
test -f docs/book/index.html || { echo "the book did not build"; exit 1; }
python3 .ci/book-links.py docs/book README.md
