/* IPv4 fragments from a VM (tests/it/vm/gateway.rs): a UDP datagram of 1,200 bytes in two fragments, and a TCP
 * SYN whose header is itself split (a first fragment of 8 bytes: the ports, not the flags, as a filter that
 * judges by the first fragment alone would be fooled), from SRC to DST:PORT, each written whole by hand on a raw
 * socket (IP_HDRINCL). Exit 0 when the kernel took every fragment. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

/* The Internet checksum of the pseudo-header and `len` bytes of `data`. */
static uint16_t checksum(uint32_t src, uint32_t dst, uint8_t proto, const uint8_t *data, size_t len) {
    uint32_t sum = 0;
    sum += (ntohl(src) >> 16) + (ntohl(src) & 0xffff);
    sum += (ntohl(dst) >> 16) + (ntohl(dst) & 0xffff);
    sum += proto + (uint32_t)len;
    for (size_t i = 0; i + 1 < len; i += 2) sum += (uint32_t)(data[i] << 8 | data[i + 1]);
    if (len & 1) sum += (uint32_t)(data[len - 1] << 8);
    while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
    return htons((uint16_t)~sum);
}

/* Send `len` bytes of transport `payload` as fragments: the first carries `first` bytes (a multiple of 8). */
static int fragmented(int s, uint32_t src, uint32_t dst, uint8_t proto, uint16_t id, const uint8_t *payload,
                      size_t len, size_t first) {
    struct sockaddr_in to = {.sin_family = AF_INET, .sin_addr.s_addr = dst};
    for (size_t off = 0; off < len;) {
        size_t part = off == 0 ? first : len - off;
        uint8_t pkt[1600];
        struct iphdr *ip = (struct iphdr *)pkt;
        memset(ip, 0, sizeof *ip);
        ip->version = 4;
        ip->ihl = 5;
        ip->ttl = 64;
        ip->protocol = proto;
        ip->id = htons(id);
        ip->saddr = src;
        ip->daddr = dst;
        ip->tot_len = htons((uint16_t)(sizeof *ip + part));
        ip->frag_off = htons((uint16_t)((off / 8) | (off + part < len ? IP_MF : 0)));
        memcpy(pkt + sizeof *ip, payload + off, part);
        if (sendto(s, pkt, sizeof *ip + part, 0, (struct sockaddr *)&to, sizeof to) < 0) {
            perror("sendto");
            return 1;
        }
        off += part;
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: fragments SRC DST PORT\n");
        return 2;
    }
    uint32_t src = inet_addr(argv[1]), dst = inet_addr(argv[2]);
    uint16_t port = (uint16_t)atoi(argv[3]);
    int s = socket(AF_INET, SOCK_RAW, IPPROTO_RAW);
    if (s < 0) {
        perror("socket");
        return 1;
    }
    /* UDP: 8 bytes of header and 1,192 of data, in fragments of 800 and 400. */
    uint8_t udp[1200];
    memset(udp, 'u', sizeof udp);
    udp[0] = 0xc3; udp[1] = 0x50; /* source port 50000 */
    udp[2] = (uint8_t)(port >> 8); udp[3] = (uint8_t)port;
    udp[4] = (uint8_t)(sizeof udp >> 8); udp[5] = (uint8_t)sizeof udp;
    udp[6] = udp[7] = 0;
    uint16_t c = checksum(src, dst, IPPROTO_UDP, udp, sizeof udp);
    memcpy(udp + 6, &c, 2);
    /* TCP: a SYN of 20 bytes of header and 4 of data, its header split after the ports and sequence number. */
    uint8_t tcp[24];
    memset(tcp, 0, sizeof tcp);
    tcp[0] = 0xc3; tcp[1] = 0x51; /* source port 50001 */
    tcp[2] = (uint8_t)(port >> 8); tcp[3] = (uint8_t)port;
    tcp[7] = 1;            /* sequence number 1 */
    tcp[12] = 5 << 4;      /* header of five words */
    tcp[13] = 0x02;        /* SYN */
    tcp[14] = 0xff; tcp[15] = 0xff; /* window */
    memcpy(tcp + 20, "frag", 4);
    c = checksum(src, dst, IPPROTO_TCP, tcp, sizeof tcp);
    memcpy(tcp + 16, &c, 2);
    int failed = fragmented(s, src, dst, IPPROTO_UDP, 0x4d01, udp, sizeof udp, 800);
    failed |= fragmented(s, src, dst, IPPROTO_TCP, 0x4d02, tcp, sizeof tcp, 8);
    return failed;
}
