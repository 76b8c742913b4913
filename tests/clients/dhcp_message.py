"""Send one DHCP message as a whole Ethernet frame (scapy), with every field a hostile VM could set: the test's
attacker in tests/it/gateway/dhcp_hostile.rs.

    python3 dhcp_message.py IFACE KEY=VALUE... [-- KEY=VALUE...]...

Each group of KEY=VALUE arguments (groups separated by `--`) is one message; they are sent in order, 50 ms
apart, by one process (scapy takes seconds to import).

Keys (all optional but type): type (discover, request, decline, release, inform, or a number), xid (decimal),
src and dst (IPv4; default 0.0.0.0 and 255.255.255.255), sport (default 68), op (default 1), htype (1), hlen (6),
chaddr (MAC; default IFACE's), ether_src (MAC; default IFACE's), ciaddr, giaddr, requested (option 50),
server_id (option 54), client_id (MAC: option 61 as type 1 and the MAC).
"""
import sys
import time

from scapy.all import BOOTP, DHCP, IP, UDP, Ether, conf, sendp

TYPES = {"discover": 1, "request": 3, "decline": 4, "release": 7, "inform": 8}


def mac_bytes(mac):
    return bytes.fromhex(mac.replace(":", ""))


def message(own, f):
    t = f["type"]
    options = [("message-type", TYPES.get(t) or int(t))]
    if "requested" in f:
        options.append(("requested_addr", f["requested"]))
    if "server_id" in f:
        options.append(("server_id", f["server_id"]))
    if "client_id" in f:
        options.append(("client_id", b"\x01" + mac_bytes(f["client_id"])))
    options.append("end")
    frame = (
        Ether(src=f.get("ether_src", own), dst="ff:ff:ff:ff:ff:ff")
        / IP(src=f.get("src", "0.0.0.0"), dst=f.get("dst", "255.255.255.255"))
        / UDP(sport=int(f.get("sport", 68)), dport=67)
        / BOOTP(
            op=int(f.get("op", 1)),
            htype=int(f.get("htype", 1)),
            hlen=int(f.get("hlen", 6)),
            xid=int(f.get("xid", 1)),
            ciaddr=f.get("ciaddr", "0.0.0.0"),
            giaddr=f.get("giaddr", "0.0.0.0"),
            chaddr=mac_bytes(f.get("chaddr", own)) + b"\0" * 10,
            flags=0x8000,
        )
        / DHCP(options=options)
    )
    return frame


def main():
    iface = sys.argv[1]
    with open(f"/sys/class/net/{iface}/address") as h:
        own = h.read().strip()
    groups, group = [], []
    for a in sys.argv[2:] + ["--"]:
        if a == "--":
            if group:
                groups.append(dict(g.split("=", 1) for g in group))
            group = []
        else:
            group.append(a)
    conf.verb = 0
    for f in groups:
        sendp(message(own, f), iface=iface)
        time.sleep(0.05)


if __name__ == "__main__":
    main()
