#!/usr/bin/env python3
"""Sample a process every second until it exits or STOP_FILE appears: resident memory, open descriptors,
threads, and (from cordon's /metrics) open connections and tunnels. One JSON line per sample on stdout.

usage: sample.py PID METRICS_URL STOP_FILE
"""
import json
import os
import sys
import time
import urllib.request

pid, metrics_url, stop = int(sys.argv[1]), sys.argv[2], sys.argv[3]


def status(field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def gauges():
    """The sum of cordon_open_connections and of cordon_open_tunnels over their labels."""
    total = {"connections": 0, "tunnels": 0}
    try:
        text = urllib.request.urlopen(metrics_url, timeout=2).read().decode()
    except OSError:
        return total
    for line in text.splitlines():
        for name, key in (("cordon_open_connections", "connections"), ("cordon_open_tunnels", "tunnels")):
            if line.startswith(name + "{") or line.startswith(name + " "):
                total[key] += int(float(line.rsplit(" ", 1)[1]))
    return total


start = time.monotonic()
while os.path.exists(f"/proc/{pid}") and not os.path.exists(stop):
    sample = {
        "t": round(time.monotonic() - start, 1),
        "rss_kib": status("VmRSS"),
        "fds": len(os.listdir(f"/proc/{pid}/fd")),
        "threads": status("Threads"),
        **gauges(),
    }
    print(json.dumps(sample), flush=True)
    time.sleep(1)
