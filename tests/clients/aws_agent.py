"""An agent's AWS calls, with boto3 (PyPI), for cordon's SigV4 tests (tests/it/credentials/aws_sigv4.rs).

    aws_agent.py setup ENDPOINT        as an administrator, straight to the server (moto): an IAM user with a
                                       key and an allow-all policy, a role it may assume (S3 only), a bucket;
                                       prints {"key_id", "secret", "role_arn"}
    aws_agent.py s3 ENDPOINT BUCKET    as the agent, with the keys and proxy of its environment: put (small, and
                                       large enough to go aws-chunked), get, list; prints what each gave
    aws_agent.py presign URL           a presigned GET of URL (host/bucket/key) with the environment's keys,
                                       fetched through the proxy; prints {"status", "body", "url"}
    aws_agent.py call ENDPOINT BUCKET WHAT   one call that should fail; prints {"error": CODE or HTTP status}
        WHAT: iam (ListUsers), put (PutObject), list (ListObjectsV2), stale (a GET signed 20 minutes ago), expired (a presigned URL past its life)
    aws_agent.py mint ENDPOINT WHAT    a call that mints credentials, with boto3; prints {"status", "reason", "result"}
        WHAT: session (STS GetSessionToken), role ROLE_ARN (STS AssumeRole), key (IAM CreateAccessKey), ecr (ECR
        GetAuthorizationToken, JSON protocol), codeartifact (CodeArtifact GetAuthorizationToken, REST)
    aws_agent.py table ENDPOINT NAME...  each `service:Action` (the book's minting table) called with boto3, every
        required parameter a stub; prints [{"name", "status", "reason"} or {"name", "skipped"}]
    aws_agent.py raw ENDPOINT SERVICE METHOD QUERY BODY [HEADER:VALUE...]   one request signed with botocore's
        SigV4Auth exactly as written (QUERY and BODY as they go, `-` for none); headers after the first `--` are
        added after signing; prints {"status", "reason", "body"}

Every output is one JSON object on stdout. TLS is verified against AWS_CA_BUNDLE (the sandbox's bundle, or
the test CA for `setup`).
"""

import datetime
import json
import os
import sys
import time
from unittest import mock

import boto3
import botocore.auth
import botocore.session
import botocore.parsers
import requests
from botocore.awsrequest import AWSRequest
from botocore.config import Config
from botocore.exceptions import ClientError

REGION = "us-east-1"


def client(service, endpoint, **kw):
    cfg = Config(signature_version="s3v4", s3={"addressing_style": "path"}, retries={"max_attempts": 1})
    region = os.environ.get("AWS_DEFAULT_REGION", REGION)
    return boto3.client(service, endpoint_url=endpoint, region_name=region, config=cfg, **kw)


def setup(endpoint):
    admin = {"aws_access_key_id": "admin", "aws_secret_access_key": "admin"}
    iam = client("iam", endpoint, **admin)
    iam.create_user(UserName="agent")
    key = iam.create_access_key(UserName="agent")["AccessKey"]
    allow_all = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}
    iam.put_user_policy(UserName="agent", PolicyName="all", PolicyDocument=json.dumps(allow_all))
    trust = {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Principal": {"AWS": "arn:aws:iam::123456789012:user/agent"}, "Action": "sts:AssumeRole"}],
    }
    role = iam.create_role(RoleName="agent-s3", AssumeRolePolicyDocument=json.dumps(trust))["Role"]
    s3_only = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}
    iam.put_role_policy(RoleName="agent-s3", PolicyName="s3", PolicyDocument=json.dumps(s3_only))
    client("s3", endpoint, **admin).create_bucket(Bucket="agent-bucket")
    print(json.dumps({"key_id": key["AccessKeyId"], "secret": key["SecretAccessKey"], "role_arn": role["Arn"]}))


def s3(endpoint, bucket):
    c = client("s3", endpoint)
    out = {}
    c.put_object(Bucket=bucket, Key="notes/a.txt", Body=b"written through cordon\n")
    # A body past botocore's streaming threshold goes aws-chunked with a checksum trailer.
    big = b"x" * (300 * 1024)
    c.upload_fileobj(__import__("io").BytesIO(big), bucket, "notes/big.bin")
    out["get"] = c.get_object(Bucket=bucket, Key="notes/a.txt")["Body"].read().decode()
    out["big"] = len(c.get_object(Bucket=bucket, Key="notes/big.bin")["Body"].read())
    out["list"] = sorted(o["Key"] for o in c.list_objects_v2(Bucket=bucket).get("Contents", []))
    print(json.dumps(out))


def call(endpoint, bucket, what):
    c = client("s3", endpoint)
    try:
        if what == "iam":
            client("iam", endpoint).list_users()
        elif what == "put":
            c.put_object(Bucket=bucket, Key="denied.txt", Body=b"no")
        elif what == "list":
            c.list_objects_v2(Bucket=bucket)
        elif what == "stale":
            past = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None) - datetime.timedelta(minutes=20)
            creds = boto3.Session().get_credentials().get_frozen_credentials()
            req = AWSRequest(method="GET", url=f"{endpoint}/{bucket}/notes/a.txt")
            req.headers["x-amz-content-sha256"] = "UNSIGNED-PAYLOAD"
            with mock.patch.object(botocore.auth, "get_current_datetime", return_value=past):
                botocore.auth.S3SigV4Auth(creds, "s3", REGION).add_auth(req)
            r = requests.get(req.url, headers=dict(req.headers), timeout=20)
            print(json.dumps({"error": r.status_code, "reason": r.headers.get("x-cordon-reason")}))
            return
        elif what == "expired":
            url = c.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "notes/a.txt"}, ExpiresIn=1)
            time.sleep(2.5)
            r = requests.get(url, timeout=20)
            print(json.dumps({"error": r.status_code, "reason": r.headers.get("x-cordon-reason")}))
            return
        print(json.dumps({"error": None}))
    except ClientError as e:
        meta = e.response.get("ResponseMetadata", {})
        print(json.dumps({
            "error": e.response.get("Error", {}).get("Code") or meta.get("HTTPStatusCode"),
            "status": meta.get("HTTPStatusCode"),
            "reason": meta.get("HTTPHeaders", {}).get("x-cordon-reason"),
        }))


def mint(endpoint, what, arg=None):
    service, call = {
        "session": ("sts", lambda c: c.get_session_token()["Credentials"]),
        "role": ("sts", lambda c: c.assume_role(RoleArn=arg, RoleSessionName="agent")["Credentials"]),
        "key": ("iam", lambda c: c.create_access_key(UserName="agent")["AccessKey"]),
        "ecr": ("ecr", lambda c: c.get_authorization_token()["authorizationData"]),
        "codeartifact": ("codeartifact", lambda c: c.get_authorization_token(domain="agent-domain")),
    }[what]
    c = client(service, endpoint)
    seen = {}

    def before_parse(response_dict, **_):
        # The answer as it came, before botocore parses it (cordon's refusal is not XML or JSON).
        seen["status"] = response_dict["status_code"]
        seen["reason"] = response_dict["headers"].get("x-cordon-reason")

    c.meta.events.register("before-parse", before_parse)
    try:
        result = call(c)
        print(json.dumps({"status": seen.get("status"), "reason": None, "result": result}, default=str))
    except (ClientError, botocore.parsers.ResponseParserError):
        print(json.dumps({"status": seen.get("status"), "reason": seen.get("reason"), "result": None}))


def raw(endpoint, service, method, query, body, extra):
    creds = boto3.Session().get_credentials().get_frozen_credentials()
    url = endpoint + "/" + ("" if query == "-" else "?" + query)
    data = None if body == "-" else body.encode()
    before, after = {}, {}
    target = before
    for h in extra:
        if h == "--":
            target = after
            continue
        k, _, v = h.partition(":")
        target[k] = v
    if data is not None and "Content-Type" not in before:
        before["Content-Type"] = "application/x-www-form-urlencoded; charset=utf-8"
    req = AWSRequest(method=method, url=url, data=data, headers=before)
    botocore.auth.SigV4Auth(creds, service, os.environ.get("AWS_DEFAULT_REGION", REGION)).add_auth(req)
    headers = dict(req.headers)
    headers.update(after)
    r = requests.request(method, url, data=data, headers=headers, timeout=20)
    print(json.dumps({"status": r.status_code, "reason": r.headers.get("x-cordon-reason"), "body": r.text[:4000]}))


def stub(shape, depth=0):
    """A value of `shape` with every required member filled: enough for botocore to serialize the call."""
    t = shape.type_name
    if t == "structure":
        return {k: stub(shape.members[k], depth + 1) for k in shape.required_members} if depth < 6 else {}
    if t == "list":
        return [stub(shape.member, depth + 1)]
    if t == "map":
        return {}
    if t in ("integer", "long"):
        return 1
    if t in ("float", "double"):
        return 1.0
    if t == "boolean":
        return True
    if t == "timestamp":
        return datetime.datetime(2030, 1, 1)
    if t == "blob":
        return b"x"
    return "x"


# The services an IAM action prefix may be in, when the prefix is not botocore's name for it.
PREFIXES = {"sso-oauth": ["sso-oidc"], "sso": ["sso", "sso-admin"]}


def table(endpoint, names):
    """Each `service:Action` of the book's minting table, called with boto3 (the protocol botocore uses for that
    service, every required parameter a stub); prints [{"name", "status", "reason"} or {"name", "skipped"}]."""
    out = []
    session = botocore.session.get_session()
    for name in names:
        prefix, _, action = name.partition(":")
        found = None
        for service in PREFIXES.get(prefix, [prefix]):
            try:
                model = session.get_service_model(service)
            except Exception:
                continue
            if action in model.operation_names:
                found = (service, model.operation_model(action))
                break
        if found is None:
            out.append({"name": name, "skipped": "not an operation of any botocore service"})
            continue
        service, op = found
        if op.auth_type == "none" or getattr(op, "auth", None) == ["smithy.api#noAuth"]:
            out.append({"name": name, "skipped": "an unsigned operation: no AWS keys are injected into it"})
            continue
        c = boto3.client(service, endpoint_url=endpoint, region_name=REGION, config=Config(
            signature_version="s3v4" if service == "s3" else None, s3={"addressing_style": "path"},
            retries={"max_attempts": 1}, parameter_validation=False))
        seen = {}

        def before_parse(response_dict, seen=seen, **_):
            seen["status"] = response_dict["status_code"]
            seen["reason"] = response_dict["headers"].get("x-cordon-reason")

        c.meta.events.register("before-parse", before_parse)
        try:
            c._make_api_call(action, stub(op.input_shape) if op.input_shape is not None else {})
        except Exception as e:  # a refusal is not the service's error shape; a stub may be refused by moto
            seen.setdefault("error", type(e).__name__)
        out.append({"name": name, "status": seen.get("status"), "reason": seen.get("reason")})
    print(json.dumps(out))


def presign(url):
    endpoint, _, rest = url.partition("://")[2].partition("/")
    bucket, _, key = rest.partition("/")
    c = client("s3", "https://" + endpoint)
    signed = c.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": key}, ExpiresIn=300)
    r = requests.get(signed, timeout=20)
    print(json.dumps({"status": r.status_code, "body": r.text, "url": signed, "reason": r.headers.get("x-cordon-reason")}))


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "setup":
        setup(sys.argv[2])
    elif cmd == "s3":
        s3(sys.argv[2], sys.argv[3])
    elif cmd == "presign":
        presign(sys.argv[2])
    elif cmd == "mint":
        mint(sys.argv[2], sys.argv[3], *sys.argv[4:5])
    elif cmd == "raw":
        raw(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6], sys.argv[7:])
    elif cmd == "table":
        table(sys.argv[2], sys.argv[3:])
    elif cmd == "call":
        call(sys.argv[2], sys.argv[3], sys.argv[4])
    else:
        sys.exit(f"unknown command {cmd}")
