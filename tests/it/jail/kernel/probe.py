# Tried from inside a jail, as an attacker would: every way to a socket, a keyring or another process's memory
# that goes around the jail's walls. Prints name=ok[:detail] or name=errno:N, one a line.
import ctypes, os, socket, sys

libc = ctypes.CDLL(None, use_errno=True)
host_dgram = sys.argv[1]  # a host service's datagram socket, by path
relay = sys.argv[2] if len(sys.argv) > 2 else None  # host:port of the relay, when there is one


def attempt(name, f):
    try:
        detail = f()
        print(f"{name}=ok" + (f":{detail}" if detail is not None else ""))
    except OSError as e:
        print(f"{name}=errno:{e.errno}")


def call(nr, *args):
    r = libc.syscall(ctypes.c_long(nr), *args)
    if r < 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))


def pair_sendto(kind):
    a, b = socket.socketpair(socket.AF_UNIX, kind)
    a.sendto(b"from-the-jail", host_dgram)


def pair_roundtrip():
    a, b = socket.socketpair()
    a.send(b"x")
    return b.recv(1).decode()


attempt("unix_stream", lambda: socket.socket(socket.AF_UNIX, socket.SOCK_STREAM).connect(host_dgram))
attempt("unix_dgram", lambda: socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).sendto(b"from-the-jail", host_dgram))
attempt("pair_dgram_sendto", lambda: pair_sendto(socket.SOCK_DGRAM))
attempt("pair_raw_sendto", lambda: pair_sendto(socket.SOCK_RAW))
attempt("pair_stream_sendto", lambda: pair_sendto(socket.SOCK_STREAM))
attempt("pair_seqpacket_sendto", lambda: pair_sendto(socket.SOCK_SEQPACKET))
attempt("pair_stream", pair_roundtrip)
attempt("vsock", lambda: socket.socket(socket.AF_VSOCK, socket.SOCK_STREAM))
attempt("packet", lambda: socket.socket(socket.AF_PACKET, socket.SOCK_RAW))
attempt("netlink_uevent", lambda: socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, 15))
attempt("netlink_route", lambda: socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0) and None)
if relay:
    host, port = relay.rsplit(":", 1)
    attempt("tcp_relay", lambda: socket.create_connection((host, int(port)), timeout=3) and None)
# Keyrings: KEYCTL_SEARCH the user keyring (@u = -4) for the key the host put there and KEYCTL_READ it; add_key
# to @u.
def key_read():
    serial = libc.syscall(ctypes.c_long(250), 10, -4, b"user", b"cordon-kernel-test", 0)
    if serial < 0:
        raise OSError(ctypes.get_errno(), "keyctl")
    buf = ctypes.create_string_buffer(64)
    n = libc.syscall(ctypes.c_long(250), 11, serial, buf, 64)
    return buf.raw[: max(n, 0)].decode()


attempt("keyctl_read", key_read)
attempt("add_key", lambda: call(248, b"user", b"from-the-jail", b"v", 1, -4))
attempt("request_key", lambda: call(249, b"user", b"cordon-kernel-test", None, 0))
attempt("userfaultfd", lambda: call(323, 1))  # UFFD_USER_MODE_ONLY
attempt("bpf", lambda: call(321, 0, None, 0))
attempt("perf_event_open", lambda: call(298, ctypes.create_string_buffer(128), 0, -1, -1, 0))
# Every other process in the jail: its memory, ptrace, process_vm_readv, pidfd_getfd.
me = os.getpid()
for pid in sorted(int(p) for p in os.listdir("/proc") if p.isdigit()):
    if pid == me:
        continue
    try:
        comm = open(f"/proc/{pid}/comm").read().strip()
    except OSError:
        continue
    tag = f"pid_{comm}_{pid}"
    attempt(tag + "_mem", lambda: open(f"/proc/{pid}/mem", "r+b").close())
    attempt(tag + "_environ", lambda: open(f"/proc/{pid}/environ", "rb").read(1) and None)
    attempt(tag + "_ptrace", lambda: call(101, 0x4206, pid, 0, 0))  # PTRACE_SEIZE: does not stop it
    local = (ctypes.c_char * 8)()
    iov = (ctypes.c_void_p * 2)(ctypes.cast(local, ctypes.c_void_p), 8)
    remote = (ctypes.c_void_p * 2)(ctypes.cast(local, ctypes.c_void_p), 8)
    attempt(tag + "_vm_readv", lambda: call(310, pid, iov, 1, remote, 1, 0))

    def getfd():
        fd = libc.syscall(ctypes.c_long(434), pid, 0)  # pidfd_open
        if fd < 0:
            raise OSError(ctypes.get_errno(), "pidfd_open")
        call(438, fd, 0, 0)  # pidfd_getfd: its stdin

    attempt(tag + "_pidfd_getfd", getfd)
