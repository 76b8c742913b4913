#!/usr/bin/env python3
"""Fold a perf profile of cordon into components, to say where the CPU of a request goes.

    perf script -i PERF.DATA -F comm,ip,sym,dso --no-inline | python3 benches/load/perf_components.py
    perf script -i ALLOC.DATA -F ip,sym --no-inline | python3 benches/load/perf_components.py --sites

Record with full stacks: `CALLGRAPH="--call-graph dwarf,32768" PERF=1 bash benches/load/profile.sh intercept 6`.
Each sample is charged to the first frame, from the leaf upward, that belongs to a component; samples that end
in malloc/free, memmove or the kernel are counted as such and broken down by the component that called them.

`--sites` reads a profile of allocation calls (uprobes on mimalloc: `perf probe -x BIN mi_malloc_aligned`, then
`perf record -e probe_cordon:mi_malloc_aligned --call-graph dwarf -p PID`) and prints the components and the
first named function above the allocator that make them.
"""
import collections
import re
import sys

COMPONENTS = [
    ("tls: AES-GCM and other crypto", r"aesni|gcm|ghash|\bring::|ring_core|chacha|poly1305"),
    ("tls: rustls records and state", r"^rustls::|<rustls::|tokio_rustls::"),
    ("h2 client (upstream)", r"^h2::|hyper::proto::h2"),
    ("hyper h1 server: parse and encode", r"hyper::proto::h1::role|httparse"),
    ("cordon: audit record", r"cordon::audit"),
    ("cordon: credentials", r"cordon::credentials"),
    ("cordon: headers and framing", r"cordon::proxy::headers|cordon::framing"),
    ("cordon: policy", r"cordon::policy"),
    ("cordon: metrics", r"cordon::metrics|prometheus"),
    ("hyper-util pool and client", r"hyper_util::client"),
    ("cordon: pipeline and entry points", r"cordon::"),
    ("hyper h1 dispatch and io", r"hyper::"),
    ("tokio runtime", r"tokio::"),
]
COMPONENTS = [(name, re.compile(rx)) for name, rx in COMPONENTS]
LEAF = [("malloc and free", re.compile(r"(^|_)mi_")), ("memmove and memcpy", re.compile(r"memmove|memcpy|memset"))]
NOT_A_SITE = re.compile(r"mi_|__rust|alloc::|core::|<alloc|hashbrown|RawVec|Vec<|std::|\[unknown\]|bytes::|<T as|<\[")


def samples(lines):
    """Yield (comm, [(symbol, in_kernel)]) per sample of `perf script` output."""
    comm, frames = "", []
    for line in lines:
        if not line.strip():
            if frames:
                yield comm, frames
            comm, frames = "", []
        elif line[0] not in " \t":
            comm = line.split()[0]
        else:
            parts = line.strip().split(None, 1)
            if len(parts) == 2:
                m = re.match(r"(.*) \((.*)\)$", parts[1])
                sym, dso = (m.group(1), m.group(2)) if m else (parts[1], "")
                frames.append((re.sub(r"\+0x[0-9a-f]+$", "", sym), "kernel" in dso))
    if frames:
        yield comm, frames


def owner(frames):
    for sym, _ in frames:
        for name, rx in COMPONENTS:
            if rx.search(sym):
                return name
    return "other"


def main():
    sites_mode = "--sites" in sys.argv[1:]
    counts, detail, total = collections.Counter(), collections.defaultdict(collections.Counter), 0
    for comm, frames in samples(sys.stdin):
        total += 1
        if sites_mode:
            counts[owner(frames)] += 1
            site = next((s for s, _ in frames if not NOT_A_SITE.search(s)), "other")
            detail["sites"][site[:110]] += 1
            continue
        if comm.startswith("cordon-audit"):
            counts["the audit thread"] += 1
            continue
        leaf, in_kernel = frames[0]
        kind = "kernel" if in_kernel else next((n for n, rx in LEAF if rx.search(leaf)), None)
        who = owner(frames)
        if kind:
            counts[kind] += 1
            detail[kind][who] += 1
        else:
            counts[who] += 1
    if not total:
        sys.exit("no samples on standard input")
    for name, n in counts.most_common():
        print("%6.1f%%  %s" % (100.0 * n / total, name))
        for sub, m in detail[name].most_common(5):
            print("          %5.1f%%  %s" % (100.0 * m / total, sub))
    if sites_mode:
        print("first named caller of the allocator:")
        for site, m in detail["sites"].most_common(30):
            print("%6.1f%%  %s" % (100.0 * m / total, site))
    print("samples: %d" % total)


if __name__ == "__main__":
    main()
