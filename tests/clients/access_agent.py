"""An agent that meets cordon's wall and asks its way through, with a real HTTP client (requests).

Usage: access_agent.py URL RULE_JSON LIFETIME

It GETs URL through the proxy in AGENT_PROXY (asking for JSON). Refused, it reads the refusal
(cordon.refusal/1): where asking can help and the body names `ask_at`, it files an access request for
RULE_JSON there, prints `FILED <id> <state>` at once, polls its request until it is granted (or ends
otherwise), then GETs URL again. Prints `AFTER <status>` and exits 0 when that answer is 200.
Exit codes: 2 the refusal was not cordon's, 3 asking cannot help, 4 the request was not filed,
5 the request ended without a grant, 6 it was not decided in time, 7 refused again after the grant.
"""

import json
import os
import sys
import time

import requests

REFUSAL = "application/vnd.cordon.refusal+json"


def main() -> int:
    url, rule, lifetime = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]
    proxy = os.environ["AGENT_PROXY"]
    s = requests.Session()
    s.trust_env = False
    s.proxies = {"http": proxy, "https": proxy}
    s.headers["Accept"] = "application/json"
    first = s.get(url, timeout=10)
    if first.status_code == 200:
        print("AFTER 200 (allowed at once)", flush=True)
        return 0
    if not first.headers.get("content-type", "").startswith(REFUSAL):
        print(f"NOT-CORDON {first.status_code} {first.text[:200]}", flush=True)
        return 2
    refusal = first.json()
    assert refusal["schema"] == "cordon.refusal/1", refusal
    if not refusal.get("ask") or not refusal.get("ask_at"):
        print(f"CANNOT-ASK {refusal['reason']}", flush=True)
        return 3
    asked = s.post(
        refusal["ask_at"],
        json={"allow": [rule], "reason": f"the task needs {refusal['refused']['method']} {url}", "lifetime": lifetime},
        timeout=10,
    )
    if asked.status_code not in (201, 202):
        print(f"NOT-FILED {asked.status_code} {asked.text[:400]}", flush=True)
        return 4
    request = asked.json()
    print(f"FILED {request['id']} {request['state']}", flush=True)
    deadline = time.monotonic() + 90
    while request["state"] == "pending":
        if time.monotonic() > deadline:
            print("UNDECIDED", flush=True)
            return 6
        time.sleep(0.3)
        request = s.get(request["poll"], timeout=10).json()
    if request["state"] != "granted":
        print(f"ENDED {request['state']}", flush=True)
        return 5
    again = s.get(url, timeout=10)
    print(f"AFTER {again.status_code}", flush=True)
    return 0 if again.status_code == 200 else 7


if __name__ == "__main__":
    sys.exit(main())
