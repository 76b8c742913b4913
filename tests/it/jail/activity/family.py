# Run inside a jail by tests/it/jail/activity.rs and activity_user.rs: every way a jailed command has to name a
# file or program it writes or runs, each case named by the file it makes (or tries), and the programs it runs.
# argv[1]: the folder the command may write (its working folder).
import ctypes
import os
import shutil
import stat
import subprocess
import sys

p = sys.argv[1]
os.chdir(p)
libc = ctypes.CDLL(None, use_errno=True)
# Each kind of case in a folder of its own: the log records 16 events of a folder one by one per window.
os.makedirs("spell/sub")
os.makedirs("ops/sub")
os.makedirs("fail/sub")

# Spellings of one folder: relative, through /proc/self and /proc/thread-self, a descriptor (/proc/self/fd, /dev/fd,
# openat's dirfd), a link in the jail's own /tmp (absolute, to a folder only the jail has), `..` after a link.
open("spell/rel.txt", "w").close()
open("/proc/self/cwd/spell/proc-self.txt", "w").close()
open("/proc/thread-self/cwd/spell/thread-self.txt", "w").close()
d = os.open("spell", os.O_RDONLY | os.O_DIRECTORY)
open(f"/proc/self/fd/{d}/fd-link.txt", "w").close()
open(f"/dev/fd/{d}/dev-fd.txt", "w").close()
os.close(os.open("dirfd.txt", os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=d))
os.makedirs("/tmp/inner-real")
os.symlink("/tmp/inner-real", "/tmp/inner-link")
open("/tmp/inner-link/abs-link.txt", "w").close()
os.symlink(p + "/spell/sub", "/tmp/outer-link")
open("/tmp/outer-link/../dots.txt", "w").close()


# openat2, whose flags are in memory: a create is recorded as one, a read is not recorded.
class How(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


def openat2(path, flags):
    how = How(flags, 0o644 if flags & os.O_CREAT else 0, 0)
    fd = libc.syscall(437, -100, path.encode(), ctypes.byref(how), ctypes.sizeof(how))
    assert fd >= 0, ctypes.get_errno()
    os.close(fd)


openat2("spell/openat2.txt", os.O_CREAT | os.O_WRONLY)
openat2("spell/openat2.txt", os.O_RDONLY)
openat2("spell/rel.txt", os.O_WRONLY | os.O_TRUNC)

# mknod, a folder named through `..`, an unnamed file (O_TMPFILE), a rename, a hard link, a removal.
os.mknod("ops/fifo", 0o600 | stat.S_IFIFO)
os.mkdir("ops/sub/../made")
os.close(os.open("ops", os.O_TMPFILE | os.O_WRONLY, 0o600))
open("ops/a.txt", "w").close()
os.rename("ops/a.txt", "ops/renamed.txt")
os.link("ops/renamed.txt", "ops/hard.txt")
os.unlink("ops/renamed.txt")
os.close(os.open("ops/hard.txt", os.O_PATH | os.O_WRONLY | os.O_TRUNC))
open("fail/file.txt", "w").close()
os.symlink("file.txt", "fail/lnk")
os.mkdir("locked", 0o555)


# Attempts the kernel refuses: recorded with its error, not as done.
def refused(what, f):
    try:
        f()
        print("not refused:", what)
    except OSError:
        pass


refused("EROFS", lambda: open("/usr/cordon-read-only.txt", "w"))
refused("ENOENT", lambda: open("missing/enoent.txt", "w"))
refused("EEXIST", lambda: os.mkdir("fail/sub"))
refused("EISDIR", lambda: open("fail/sub", "w"))
refused("ENOTDIR", lambda: open("fail/file.txt/enotdir.txt", "w"))
refused("ELOOP", lambda: os.open("fail/lnk", os.O_WRONLY | os.O_NOFOLLOW))
refused("EACCES", lambda: open("locked/eacces.txt", "w"))
refused("exec ENOENT", lambda: os.execv("/usr/bin/cordon-no-such-program", ["no-such"]))


# Programs with no path: a memfd run by its descriptor (fexecve: execveat with AT_EMPTY_PATH) and through
# /proc/self/fd; and python run again through /proc/self/exe.
def run(f):
    pid = os.fork()
    if pid == 0:
        try:
            f()
        finally:
            os._exit(127)
    os.waitpid(pid, 0)


anon = os.memfd_create("cordon-anon", 0)
with open("/usr/bin/true", "rb") as f:
    os.write(anon, f.read())
run(lambda: os.execve(anon, ["anon-fd"], {}))
run(lambda: os.execv(f"/proc/self/fd/{anon}", ["anon-proc"]))
run(lambda: os.execv("/proc/self/exe", ["self-exe", "-c", "pass"]))

# Non-dumpable processes: one that says so itself, one that runs a program it may not read.
nd = "import ctypes, os; ctypes.CDLL(None).prctl(4, 0, 0, 0, 0); open('nd.txt', 'w').close(); os.mkdir('nd-dir'); "
# Relative to a descriptor, which a process that is not dumpable hides in /proc from a cordon without root.
nd += "os.mkdir('nd-at', dir_fd=os.open('nd-dir', os.O_RDONLY)); "
nd += "os.execv('/usr/bin/true', ['nd-true'])"
subprocess.run([sys.executable, "-c", nd], check=True)
shutil.copy("/usr/bin/touch", "touch-x")
os.chmod("touch-x", 0o111)
subprocess.run(["./touch-x", "nd-touch.txt"], check=True)
# Calls whose path is in no memory the process has: the kernel refuses them (EFAULT), and they are recorded as
# unreadable, with their system call, not left out.
libc.syscall(59, ctypes.c_void_p(16), None, None)
libc.syscall(257, -100, ctypes.c_void_p(16), os.O_WRONLY | os.O_CREAT, 0o644)
print("family=ok", flush=True)
