/* Tried from inside a jail: io_uring, and the x32 and i386 ABIs' twins of filtered calls. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

static void report(const char *name, long r) {
    if (r < 0) printf("%s=errno:%d\n", name, errno);
    else printf("%s=ok\n", name);
}

int main(int argc, char **argv) {
    unsigned char params[120]; /* struct io_uring_params */
    if (argc > 1 && strcmp(argv[1], "i386") == 0) {
        /* socketcall(SYS_SOCKET, ...) by the i386 entry: the arch check kills the process. */
        long r;
        __asm__ volatile("int $0x80" : "=a"(r) : "a"(102L), "b"(1L), "c"(0L) : "memory");
        printf("i386_socketcall=returned:%ld\n", r);
        return 0;
    }
    if (argc > 1 && strcmp(argv[1], "add-key") == 0) {
        /* On the host: a key in the user keyring of whoever runs this (KEY_SPEC_USER_KEYRING = -4). */
        report("add_key", syscall(SYS_add_key, "user", "cordon-kernel-test", "secret-of-the-user", 18, -4));
        return 0;
    }
    if (argc > 1 && strcmp(argv[1], "del-key") == 0) {
        /* On the host, afterwards: KEYCTL_SEARCH (10) for it, KEYCTL_INVALIDATE (21) it. */
        long key = syscall(SYS_keyctl, 10, -4, "user", "cordon-kernel-test", 0);
        report("del_key", key < 0 ? key : syscall(SYS_keyctl, 21, key));
        return 0;
    }
    memset(params, 0, sizeof params);
    report("io_uring_setup", syscall(SYS_io_uring_setup, 8, params));
    memset(params, 0, sizeof params);
    report("x32_io_uring_setup", syscall(0x40000000 | SYS_io_uring_setup, 8, params));
    report("x32_socket_unix", syscall(0x40000000 | SYS_socket, AF_UNIX, SOCK_STREAM, 0));
    report("x32_socket_vsock", syscall(0x40000000 | SYS_socket, 40, SOCK_STREAM, 0));
    report("x32_keyctl", syscall(0x40000000 | SYS_keyctl, 0, -4, 0));
    report("x32_ptrace", syscall(0x40000000 | SYS_ptrace, 0x4206, 1, 0, 0));
    return 0;
}
