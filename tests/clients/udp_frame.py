"""Send one UDP datagram as a whole Ethernet frame through a packet socket, with whatever IPv4 source
address is asked (0.0.0.0 included), as a VM with no address yet (or one that lies) can.

    python3 udp_frame.py IFACE SRC_IP SPORT DST_IP DPORT [DST_MAC]

The frame's source MAC is IFACE's own; DST_MAC defaults to broadcast. The IP and UDP checksums are
computed, so what the receiver drops it drops for the rules, not for a bad packet.
"""
import socket
import struct
import sys


def checksum(data: bytes) -> int:
    if len(data) % 2:
        data += b"\0"
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def main() -> None:
    iface, src, sport, dst, dport = sys.argv[1:6]
    dst_mac = bytes.fromhex(sys.argv[6].replace(":", "")) if len(sys.argv) > 6 else b"\xff" * 6
    with open(f"/sys/class/net/{iface}/address") as f:
        src_mac = bytes.fromhex(f.read().strip().replace(":", ""))
    payload = b"cordon-test-frame"
    s, d = socket.inet_aton(src), socket.inet_aton(dst)
    udp_len = 8 + len(payload)
    pseudo = s + d + struct.pack("!BBH", 0, socket.IPPROTO_UDP, udp_len)
    udp = struct.pack("!HHHH", int(sport), int(dport), udp_len, 0) + payload
    udp = udp[:6] + struct.pack("!H", checksum(pseudo + udp) or 0xFFFF) + udp[8:]
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + udp_len, 1, 0, 64, socket.IPPROTO_UDP, 0, s, d)
    ip = ip[:10] + struct.pack("!H", checksum(ip)) + ip[12:]
    frame = dst_mac + src_mac + b"\x08\x00" + ip + udp
    with socket.socket(socket.AF_PACKET, socket.SOCK_RAW) as sock:
        sock.bind((iface, 0))
        sock.send(frame)


if __name__ == "__main__":
    main()
