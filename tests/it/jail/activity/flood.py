# Run inside a jail by tests/it/jail/activity.rs and activity_user.rs: 30,000 spellings of one folder (each a
# distinct text, all the same folder), then 8,000 files made four ways, 2,000 each in a folder of its own: a shell's
# own redirections, processes started by fork (xargs), by vfork (posix_spawn), and threads of one process.
# argv[1]: the folder the command may write (its working folder).
import os
import subprocess
import sys
import threading

os.chdir(sys.argv[1])
os.makedirs("sp/d")
for i in range(30000):
    a, b = i % 150, i // 150
    open("sp" + "/." * a + "/" * (b + 1) + "d/../" * (i % 3) + "f", "w").close()
for f in ("shell", "xargs", "spawn", "threads"):
    os.makedirs("count/" + f)
shell = "i=0; while [ $i -lt 2000 ]; do : > count/shell/f$i; i=$((i+1)); done"
subprocess.run(["sh", "-c", shell], check=True)
subprocess.run(["sh", "-c", "seq 2000 | sed 's|^|count/xargs/f|' | xargs -P 4 -n 50 touch"], check=True)
for k in range(0, 2000, 50):
    pid = os.posix_spawn("/usr/bin/touch", ["touch"] + [f"count/spawn/f{i}" for i in range(k, k + 50)], os.environ)
    os.waitpid(pid, 0)


def made(k):
    for i in range(250):
        open(f"count/threads/f{k}-{i}", "w").close()


threads = [threading.Thread(target=made, args=(k,)) for k in range(8)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print("flood=ok", flush=True)
