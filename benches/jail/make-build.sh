#!/bin/sh
# A C project of 200 source files for BENCHMARKS.md's build under each jail:
#   sh benches/jail/make-build.sh DIR     (makes DIR/build: the sources and a Makefile; `make -j2` builds it,
#                                          `make clean` undoes it)
set -eu
dir=${1:?usage: make-build.sh DIR}
rm -rf "$dir/build"
mkdir -p "$dir/build"
cd "$dir/build"
i=0
while [ $i -lt 200 ]; do
    cat > "f$i.c" <<C
#include <stdio.h>
#include <string.h>
int f$i(const char *s) {
    char buf[64];
    snprintf(buf, sizeof buf, "%s-%d", s, $i);
    return (int)strlen(buf) * $i;
}
C
    i=$((i + 1))
done
{
    echo '#include <stdio.h>'
    i=0
    while [ $i -lt 200 ]; do echo "int f$i(const char *);"; i=$((i + 1)); done
    echo 'int main(void) { long t = 0;'
    i=0
    while [ $i -lt 200 ]; do echo "  t += f$i(\"x\");"; i=$((i + 1)); done
    printf '  printf("%%ld\\n", t); return 0; }\n'
} > main.c
cat > Makefile <<'MK'
SRCS := $(wildcard *.c)
OBJS := $(SRCS:.c=.o)
prog: $(OBJS)
	$(CC) -o $@ $(OBJS)
%.o: %.c
	$(CC) -O2 -c -o $@ $<
clean:
	rm -f prog $(OBJS)
MK
