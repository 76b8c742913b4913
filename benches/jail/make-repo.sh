#!/bin/sh
# A local git repository of 5,000 small files for BENCHMARKS.md's `git clone` under each jail:
#   sh benches/jail/make-repo.sh DIR     (makes DIR/src.git, a bare repository with one commit)
set -eu
dir=${1:?usage: make-repo.sh DIR}
rm -rf "$dir/work" "$dir/src.git"
mkdir -p "$dir/work"
cd "$dir/work"
git init -q
i=0
while [ $i -lt 5000 ]; do
    d=d$((i / 100))
    mkdir -p "$d"
    echo "file $i" > "$d/f$i.txt"
    i=$((i + 1))
done
git add -A
git -c user.name=bench -c user.email=bench@example.invalid commit -qm "5000 files"
git clone -q --bare "$dir/work" "$dir/src.git"
rm -rf "$dir/work"
