/* An IPv6 router advertisement from a VM (tests/it/vm/gateway.rs): ICMPv6 type 134 to all nodes (ff02::1) on
 * the interface named by argv[1], advertising itself as default router and the prefix 2001:db8:bad::/64 for
 * autoconfiguration, as a VM claiming the link's router would. Exit 0 when the kernel took the packet. */
#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/icmp6.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: router_advert IFNAME\n");
        return 2;
    }
    int s = socket(AF_INET6, SOCK_RAW, IPPROTO_ICMPV6);
    if (s < 0) {
        perror("socket");
        return 1;
    }
    int hops = 255;
    setsockopt(s, IPPROTO_IPV6, IPV6_MULTICAST_HOPS, &hops, sizeof hops);
    unsigned char pkt[sizeof(struct nd_router_advert) + sizeof(struct nd_opt_prefix_info)];
    memset(pkt, 0, sizeof pkt);
    struct nd_router_advert *ra = (struct nd_router_advert *)pkt;
    ra->nd_ra_type = ND_ROUTER_ADVERT;
    ra->nd_ra_curhoplimit = 64;
    ra->nd_ra_router_lifetime = htons(1800);
    struct nd_opt_prefix_info *pi = (struct nd_opt_prefix_info *)(pkt + sizeof *ra);
    pi->nd_opt_pi_type = ND_OPT_PREFIX_INFORMATION;
    pi->nd_opt_pi_len = 4;
    pi->nd_opt_pi_prefix_len = 64;
    pi->nd_opt_pi_flags_reserved = ND_OPT_PI_FLAG_ONLINK | ND_OPT_PI_FLAG_AUTO;
    pi->nd_opt_pi_valid_time = htonl(86400);
    pi->nd_opt_pi_preferred_time = htonl(14400);
    inet_pton(AF_INET6, "2001:db8:bad::", &pi->nd_opt_pi_prefix);
    struct sockaddr_in6 to;
    memset(&to, 0, sizeof to);
    to.sin6_family = AF_INET6;
    to.sin6_scope_id = if_nametoindex(argv[1]);
    inet_pton(AF_INET6, "ff02::1", &to.sin6_addr);
    for (int i = 0; i < 3; i++) {
        if (sendto(s, pkt, sizeof pkt, 0, (struct sockaddr *)&to, sizeof to) != (ssize_t)sizeof pkt) {
            perror("sendto");
            return 1;
        }
    }
    return 0;
}
