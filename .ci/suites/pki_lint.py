"""pkilint on the certificates cordon makes: a sandbox's CA (`cordon ca export`) and the leaves it mints for a
name and for an IP address (read off the TLS handshake through CONNECT). The RFC 5280 linters must find nothing
at all (WARNING or worse); the CA/Browser Forum TLS linters, written for publicly trusted CAs, must find nothing
but the findings listed below, each of which is a requirement of the public web PKI that a private,
per-sandbox interception CA does not take on (the reason is next to each)."""

import contextlib
import io
import json
import pathlib
import ssl
import sys

from pkilint.bin import lint_cabf_serverauth_cert, lint_pkix_cert, lint_pkix_signer_signee_cert_chain

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import rig  # noqa: E402

# (linter type, finding code) -> why it does not apply to cordon's CA. Anything else found fails.
JUSTIFIED = {
    ("ROOT-CA", "cabf.serverauth.ca.country_attribute_absent"):
        "a country names the legal home of a publicly trusted CA; a sandbox's CA has none",
    ("ROOT-CA", "cabf.serverauth.root_basic_constraints_pathlenconstraint_present"):
        "pathlen 0 on purpose: the CA signs leaves only, never an intermediate (defence in depth)",
    ("ROOT-CA", "cabf.serverauth.root.authority_key_identifier_extension_absent"):
        "optional in a self-signed certificate (RFC 5280 4.2.1.1); the BRs only recommend it",
    ("ROOT-CA", "cabf.serverauth.root.unknown_extension_present"):
        "the extension is nameConstraints (2.5.29.30): it limits the CA to the names its policy allows, "
        "which is what keeps a leaked sandbox CA from signing for anything else",
    ("DV-FINAL-CERTIFICATE", "cabf.serverauth.dv.common_name_attribute_present"):
        "the host is also the CN for old clients that read it; it always equals the one SAN",
    ("DV-FINAL-CERTIFICATE", "cabf.serverauth.subscriber.subject_key_identifier_extension_present"):
        "NOT RECOMMENDED by the BRs, allowed by RFC 5280; harmless",
    ("DV-FINAL-CERTIFICATE", "msft.end_entity.revocation_information_absent"):
        "leaves live about a day and are never published; the revocation is rotating the sandbox's CA",
    ("DV-FINAL-CERTIFICATE", "cabf.serverauth.subscriber.authority_info_access_extension_absent"):
        "no OCSP responder or CA issuer URL exists for a private CA that only the sandbox trusts",
    ("DV-FINAL-CERTIFICATE", "cabf.serverauth.subscriber.certificate_policies_extension_absent"):
        "the reserved CA/B Forum policy OIDs assert baseline-requirement compliance, which a private CA must "
        "not claim",
    ("DV-FINAL-CERTIFICATE", "cabf.internal_ip_address"):
        "the IP leaf's address is the test's upstream on loopback, the only kind of address a test may use; "
        "a sandbox's CA certifies what its policy allows, private ranges included",
}

NAME = "upstream.example.com"


def lint(cmd):
    """pkilint's findings (its JSON report) from the command line `cmd`, run in this process (pkilint's own
    entry points; a process each would spend most of the time importing): [(severity, code, message,
    validator)]."""
    entry = {
        "lint_pkix_cert": lint_pkix_cert.main,
        "lint_pkix_signer_signee_cert_chain": lint_pkix_signer_signee_cert_chain.main,
        "lint_cabf_serverauth_cert": lint_cabf_serverauth_cert.main,
    }[cmd[0]]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        entry(cmd[1:] + ["-s", "WARNING", "-f", "JSON"])
    if not out.getvalue().strip():
        raise SystemExit(f"{' '.join(cmd)} printed no report")
    results = json.loads(out.getvalue())["results"]
    return [(f["severity"], f["code"], f["message"], r["validator"]) for r in results for f in r["finding_descriptions"]]


def leaf_of(cordon, authority, sni, ca_file):
    """The leaf cordon mints for `sni` through `CONNECT authority`, as PEM."""
    s, status = cordon.connect(authority)
    if " 200 " not in status + " ":
        raise SystemExit(f"CONNECT {authority}: {status}")
    ctx = ssl.create_default_context(cafile=ca_file)
    with ctx.wrap_socket(s, server_hostname=sni) as t:
        der = t.getpeercert(binary_form=True)
    return ssl.DER_cert_to_PEM_cert(der)


def main():
    cases = rig.Cases("pki_lint")
    folder = rig.workdir()
    ca = rig.TestCa()
    roots = f"{folder}/upstream-ca.pem"
    with open(roots, "w") as f:
        f.write(ca.pem())
    nginx = rig.Nginx(folder, ca)
    # No up.test rule (the rig's default): a `.test` name in the CA's constraints is an internal name to pkilint.
    cordon = rig.Cordon(
        folder,
        [],
        roots=[roots],
        hosts=f"{NAME}: {rig.UPSTREAM_IP}",
        rules=[f"{{ host: {NAME}, ports: [{nginx.tls}] }}", f"{{ cidrs: [{rig.UPSTREAM_IP}/32], ports: [{nginx.tls}] }}"],
    )
    try:
        files = {"ca": f"{folder}/sandbox-ca.pem"}
        with open(files["ca"], "w") as f:
            f.write(cordon.ca_pem())
        # Python's ssl checks the chain and the host (name or IP) on the way: a leaf that fails is no leaf.
        for kind, authority, sni in [
            ("name leaf", f"{NAME}:{nginx.tls}", NAME),
            ("IP leaf", f"{rig.UPSTREAM_IP}:{nginx.tls}", rig.UPSTREAM_IP),
        ]:
            files[kind] = f"{folder}/{kind.replace(' ', '-')}.pem"
            with open(files[kind], "w") as f:
                f.write(leaf_of(cordon, authority, sni, files["ca"]))
        checks = [
            ("RFC 5280: the CA", ["lint_pkix_cert", "lint", files["ca"]], None),
            ("RFC 5280: the name leaf", ["lint_pkix_cert", "lint", files["name leaf"]], None),
            ("RFC 5280: the IP leaf", ["lint_pkix_cert", "lint", files["IP leaf"]], None),
            ("RFC 5280: CA -> name leaf", ["lint_pkix_signer_signee_cert_chain", "lint", files["ca"], files["name leaf"]], None),
            ("RFC 5280: CA -> IP leaf", ["lint_pkix_signer_signee_cert_chain", "lint", files["ca"], files["IP leaf"]], None),
            ("CA/B Forum: the CA as a root", ["lint_cabf_serverauth_cert", "lint", "-t", "ROOT-CA", files["ca"]], "ROOT-CA"),
            ("CA/B Forum: the name leaf", ["lint_cabf_serverauth_cert", "lint", "-t", "DV-FINAL-CERTIFICATE", files["name leaf"]], "DV-FINAL-CERTIFICATE"),
            ("CA/B Forum: the IP leaf", ["lint_cabf_serverauth_cert", "lint", "-t", "DV-FINAL-CERTIFICATE", files["IP leaf"]], "DV-FINAL-CERTIFICATE"),
        ]
        for name, cmd, kind in checks:
            findings = lint(cmd)
            for severity, code, message, validator in findings:
                why = JUSTIFIED.get((kind, code)) if kind else None
                if why:
                    print(f"        {name}: {severity} {code}: not for a private CA: {why}")
            unexplained = [f for f in findings if not (kind and (kind, f[1]) in JUSTIFIED)]
            cases.check(f"{name}: no finding but the justified ones", not unexplained, unexplained)
    finally:
        cordon.stop()
        nginx.stop()
    cases.done()


if __name__ == "__main__":
    main()
