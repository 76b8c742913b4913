#!/bin/sh
# BENCHMARKS.md's "The gVisor jail beside the other two": start-up, a 5,000-file clone and a build under the
# namespace jail, the jail without root and the gVisor jail (and the build outside any jail), with hyperfine.
#   sudo sh benches/jail/compare.sh CORDON DIR
# CORDON: the binary (copied where nobody can run it); DIR: a folder for the work. It writes DIR/root/c.yaml and
# DIR/user/c.yaml (one sandbox, allow: []), makes DIR/w (owned by nobody) with src.git (make-repo.sh) and build/
# (make-build.sh), and leaves hyperfine's tables in DIR/*.md.
set -eu
cordon=${1:?usage: compare.sh CORDON DIR}
dir=${2:?usage: compare.sh CORDON DIR}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$dir/root" "$dir/user" "$dir/w"
cp "$cordon" "$dir/cordon"
chmod 755 "$dir" "$dir/cordon"
for who in root user; do
    cat > "$dir/$who/c.yaml" <<YAML
sandboxes:
  - { id: bench, user: me, policy: p, token_sha256: "0000000000000000000000000000000000000000000000000000000000000000" }
policies:
  p: { allow: [] }
ca: { dir: $dir/$who/cas }
audit: { path: $dir/$who/audit.log }
YAML
done
chown -R nobody:nogroup "$dir/user"
sh "$here/make-repo.sh" "$dir"
rm -rf "$dir/w/src.git" && cp -r "$dir/src.git" "$dir/w/src.git"
sh "$here/make-build.sh" "$dir/w"
chown -R nobody:nogroup "$dir/w"
cd "$dir/w"
B=$dir/cordon
R="--config $dir/root/c.yaml"
U="--config $dir/user/c.yaml --project $dir/w"
hyperfine -N --warmup 2 --runs 10 --export-markdown "$dir/start.md" \
    -n namespace "$B jail $R --allow-root -- true" \
    -n project "runuser -u nobody -- $B jail $U -- true" \
    -n gvisor "$B jail $R --allow-root --isolation gvisor -- true"
hyperfine -N --runs 3 --prepare "rm -rf $dir/w/c" --export-markdown "$dir/clone.md" \
    -n namespace "$B jail $R --user 65534:65534 -- git clone -q --no-hardlinks src.git c" \
    -n project "runuser -u nobody -- $B jail $U -- git clone -q --no-hardlinks src.git c" \
    -n gvisor "$B jail $R --user 65534:65534 --isolation gvisor -- git clone -q --no-hardlinks src.git c"
hyperfine -N --runs 3 --prepare "make -s -C $dir/w/build clean" --export-markdown "$dir/build.md" \
    -n direct "runuser -u nobody -- make -s -j2 -C $dir/w/build" \
    -n namespace "$B jail $R --user 65534:65534 -- make -s -j2 -C build" \
    -n project "runuser -u nobody -- $B jail $U -- make -s -j2 -C build" \
    -n gvisor "$B jail $R --user 65534:65534 --isolation gvisor -- make -s -j2 -C build"
