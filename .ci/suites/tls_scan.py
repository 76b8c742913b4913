"""sslyze against cordon's TLS: the interception a sandbox sees through CONNECT (the leaf its own CA mints), and
the admin and console listeners over HTTPS. Asserts no protocol below TLS 1.2, only forward-secret AEAD cipher
suites, no vulnerability sslyze knows (Heartbleed, ROBOT, CCS injection, client renegotiation, compression,
0-RTT), strong curves, and the chain each listener should present."""

import pathlib
import sys
import warnings

from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from sslyze import (
    CertificateInfoExtraArgument,
    HttpProxySettings,
    RobotScanResultEnum,
    ScanCommand,
    ScanCommandAttemptStatusEnum,
    ScanCommandsExtraArguments,
    Scanner,
    ServerNetworkConfiguration,
    ServerNetworkLocation,
    ServerScanRequest,
    ServerScanStatusEnum,
)

import rig

COMMANDS = {
    ScanCommand.CERTIFICATE_INFO,
    ScanCommand.SSL_2_0_CIPHER_SUITES,
    ScanCommand.SSL_3_0_CIPHER_SUITES,
    ScanCommand.TLS_1_0_CIPHER_SUITES,
    ScanCommand.TLS_1_1_CIPHER_SUITES,
    ScanCommand.TLS_1_2_CIPHER_SUITES,
    ScanCommand.TLS_1_3_CIPHER_SUITES,
    ScanCommand.TLS_COMPRESSION,
    ScanCommand.TLS_1_3_EARLY_DATA,
    ScanCommand.OPENSSL_CCS_INJECTION,
    ScanCommand.TLS_FALLBACK_SCSV,
    ScanCommand.HEARTBLEED,
    ScanCommand.ROBOT,
    ScanCommand.SESSION_RENEGOTIATION,
    ScanCommand.ELLIPTIC_CURVES,
    ScanCommand.TLS_EXTENDED_MASTER_SECRET,
}


def request(host, port, ca_file, proxy=None):
    location = ServerNetworkLocation(hostname=host, port=port, ip_address=None if proxy else "127.0.0.1",
                                     http_proxy_settings=proxy)
    return ServerScanRequest(
        server_location=location,
        network_configuration=ServerNetworkConfiguration(tls_server_name_indication=host, network_timeout=10),
        scan_commands=COMMANDS,
        scan_commands_extra_arguments=ScanCommandsExtraArguments(
            certificate_info=CertificateInfoExtraArgument(custom_ca_file=pathlib.Path(ca_file))
        ),
    )


def judge(cases, name, result, issuer_cn, host):
    """Every assertion about one scanned listener."""
    if not cases.check(f"{name}: sslyze reached it", result.scan_status == ServerScanStatusEnum.COMPLETED,
                       f"{result.scan_status} {result.connectivity_error_trace}"):
        return
    attempts = result.scan_result
    done = {}
    for command in COMMANDS:
        attempt = getattr(attempts, command.value)
        ok = attempt.status == ScanCommandAttemptStatusEnum.COMPLETED
        cases.check(f"{name}: {command.value} ran", ok, f"{attempt.error_reason} {attempt.error_trace}")
        if ok:
            done[command] = attempt.result
    for old in [ScanCommand.SSL_2_0_CIPHER_SUITES, ScanCommand.SSL_3_0_CIPHER_SUITES,
                ScanCommand.TLS_1_0_CIPHER_SUITES, ScanCommand.TLS_1_1_CIPHER_SUITES]:
        if old in done:
            accepted = [c.cipher_suite.name for c in done[old].accepted_cipher_suites]
            cases.check(f"{name}: nothing accepted over {old.value[:-len('_cipher_suites')]}", not accepted, accepted)
    for version in [ScanCommand.TLS_1_2_CIPHER_SUITES, ScanCommand.TLS_1_3_CIPHER_SUITES]:
        if version not in done:
            continue
        accepted = [c.cipher_suite for c in done[version].accepted_cipher_suites]
        label = version.value[: -len("_cipher_suites")]
        cases.check(f"{name}: {label} offered", bool(accepted), "no suite accepted")
        weak = [c.name for c in accepted
                if not (("ECDHE" in c.name or label == "tls_1_3") and ("GCM" in c.name or "CHACHA20" in c.name))
                or c.key_size < 128]
        cases.check(f"{name}: {label} only forward-secret AEAD suites of 128 bits or more", not weak, weak)
        dh = [c.ephemeral_key for c in done[version].accepted_cipher_suites if c.ephemeral_key]
        small = [(k.type_name, k.size) for k in dh if k.size < 253]
        cases.check(f"{name}: {label} key exchanges of 253 bits or more", not small, small)
    if ScanCommand.HEARTBLEED in done:
        cases.check(f"{name}: not vulnerable to Heartbleed", not done[ScanCommand.HEARTBLEED].is_vulnerable_to_heartbleed)
    if ScanCommand.OPENSSL_CCS_INJECTION in done:
        cases.check(f"{name}: not vulnerable to CCS injection",
                    not done[ScanCommand.OPENSSL_CCS_INJECTION].is_vulnerable_to_ccs_injection)
    if ScanCommand.ROBOT in done:
        robot = done[ScanCommand.ROBOT].robot_result
        cases.check(f"{name}: not vulnerable to ROBOT", robot in (
            RobotScanResultEnum.NOT_VULNERABLE_NO_ORACLE, RobotScanResultEnum.NOT_VULNERABLE_RSA_NOT_SUPPORTED), robot)
    if ScanCommand.SESSION_RENEGOTIATION in done:
        r = done[ScanCommand.SESSION_RENEGOTIATION]
        cases.check(f"{name}: no client-initiated renegotiation", not r.is_vulnerable_to_client_renegotiation_dos,
                    r.client_renegotiations_success_count)
    if ScanCommand.TLS_COMPRESSION in done:
        cases.check(f"{name}: no TLS compression (CRIME)", not done[ScanCommand.TLS_COMPRESSION].supports_compression)
    if ScanCommand.TLS_1_3_EARLY_DATA in done:
        cases.check(f"{name}: no 0-RTT early data (replays)", not done[ScanCommand.TLS_1_3_EARLY_DATA].supports_early_data)
    if ScanCommand.TLS_EXTENDED_MASTER_SECRET in done:
        cases.check(f"{name}: extended master secret",
                    done[ScanCommand.TLS_EXTENDED_MASTER_SECRET].supports_ems_extension)
    if ScanCommand.ELLIPTIC_CURVES in done:
        curves = done[ScanCommand.ELLIPTIC_CURVES].supported_curves or []
        weak = [c.name for c in curves if c.name not in ("X25519", "X448", "prime256v1", "secp256r1", "secp384r1", "secp521r1")]
        cases.check(f"{name}: only strong curves", bool(curves) and not weak, f"{[c.name for c in curves]}")
    if ScanCommand.CERTIFICATE_INFO in done:
        deployments = done[ScanCommand.CERTIFICATE_INFO].certificate_deployments
        cases.check(f"{name}: one certificate chain", len(deployments) == 1, len(deployments))
        for d in deployments[:1]:
            chain = d.received_certificate_chain
            leaf = chain[0]
            custom = [v for v in d.path_validation_results if v.trust_store.name == "Supplied CA file"]
            cases.check(f"{name}: chain verifies against the expected CA",
                        bool(custom) and all(v.was_validation_successful for v in custom),
                        [(v.trust_store.name, v.validation_error) for v in d.path_validation_results])
            try:
                names = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
                dns = names.get_values_for_type(x509.DNSName)
            except x509.ExtensionNotFound:
                dns = []
            cases.check(f"{name}: leaf names the host {host}", host in dns, dns)
            issuer = leaf.issuer.get_attributes_for_oid(x509.oid.NameOID.COMMON_NAME)
            cases.check(f"{name}: leaf issued by {issuer_cn}", bool(issuer) and issuer[0].value == issuer_cn,
                        leaf.issuer.rfc4514_string())
            key = leaf.public_key()
            strong = (isinstance(key, ec.EllipticCurvePublicKey) and key.curve.key_size >= 256) or (
                isinstance(key, rsa.RSAPublicKey) and key.key_size >= 2048)
            cases.check(f"{name}: leaf key strong", strong, type(key).__name__)
            cases.check(f"{name}: leaf signed with SHA-256 or better",
                        leaf.signature_hash_algorithm is not None and leaf.signature_hash_algorithm.digest_size >= 32,
                        leaf.signature_hash_algorithm)
            cases.check(f"{name}: no SHA-1 in the chain", not d.verified_chain_has_sha1_signature)
            cases.check(f"{name}: chain sent in order", d.received_chain_has_valid_order is not False)
            cases.check(f"{name}: leaf not valid for over 398 days",
                        (leaf.not_valid_after_utc - leaf.not_valid_before_utc).days <= 398)


def main():
    # sslyze loads the Mozilla store too, whose old roots make cryptography warn; only the custom store counts here.
    warnings.filterwarnings("ignore", module="sslyze")
    cases = rig.Cases("tls_scan")
    folder = rig.workdir()
    ca = rig.TestCa("suites test CA")
    roots = f"{folder}/upstream-ca.pem"
    with open(roots, "w") as f:
        f.write(ca.pem())
    admin_cert, admin_key = ca.leaf(["admin.test"], ["127.0.0.1"])
    for n, t in [("admin.crt", admin_cert), ("admin.key", admin_key)]:
        with open(f"{folder}/{n}", "w") as f:
            f.write(t)
    nginx = rig.Nginx(folder, ca)
    admin, console = rig.free_port(), rig.free_port()
    tls = f"{{ cert: {{ file: {folder}/admin.crt }}, key: {{ file: {folder}/admin.key }} }}"
    cordon = rig.Cordon(
        folder,
        [nginx.tls],
        # sslyze opens hundreds of connections in seconds: the rate limits (which answer 429) are raised so
        # that every probe reaches TLS.
        extra=f"admin: {{ tls: {tls} }}\nconsole: {{ url: https://127.0.0.1:{console}, tls: {tls} }}\n{rig.UNLIMITED}",
        listen_extra=f", admin: 127.0.0.1:{admin}, console: 127.0.0.1:{console}",
        roots=[roots],
    )
    try:
        rig.wait_port(("127.0.0.1", admin))
        rig.wait_port(("127.0.0.1", console))
        sandbox_ca = f"{folder}/sandbox-ca.pem"
        with open(sandbox_ca, "w") as f:
            f.write(cordon.ca_pem())
        issuer = x509.load_pem_x509_certificate(open(sandbox_ca, "rb").read()).subject
        issuer_cn = issuer.get_attributes_for_oid(x509.oid.NameOID.COMMON_NAME)[0].value
        proxy = HttpProxySettings("127.0.0.1", cordon.port, "s", rig.TOKEN)
        scans = {
            "interception (CONNECT up.test)": (request("up.test", nginx.tls, sandbox_ca, proxy), issuer_cn),
            "admin listener": (request("admin.test", admin, roots), "suites test CA"),
            "console listener": (request("admin.test", console, roots), "suites test CA"),
        }
        scanner = Scanner(per_server_concurrent_connections_limit=4, concurrent_server_scans_limit=3)
        scanner.queue_scans([r for r, _ in scans.values()])
        by_port = {r.server_location.port: (n, cn) for n, (r, cn) in scans.items()}
        for result in scanner.get_results():
            name, cn = by_port[result.server_location.port]
            judge(cases, name, result, cn, result.server_location.hostname)
        cases.check("cordon still runs", cordon.alive())
    finally:
        cordon.stop()
        nginx.stop()
    cases.done()


if __name__ == "__main__":
    sys.path.insert(0, str(pathlib.Path(__file__).parent))
    main()
