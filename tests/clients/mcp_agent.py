#!/usr/bin/env python3
"""A real MCP client for the MCP policy tests: the agent side, built on the official SDK (PyPI `mcp`) and its
streamable HTTP client, running every step in one session through cordon.

    mcp_agent.py URL STEP [STEP ...]

A URL whose path ends in /sse is spoken to with the older HTTP+SSE transport (the SDK's sse_client), any other
with streamable HTTP. Each STEP is one argument: "list", "call NAME JSON_ARGS" (e.g. 'call read_file {"path": "a.txt"}') or
"touch PATH" (creates PATH, e.g. the server's --swap file). The session is initialized before the first step.
It goes through the proxy in HTTPS_PROXY / https_proxy and trusts the CA in SSL_CERT_FILE (the trust_env of
httpx2, the SDK's HTTP client), with certificate verification on. One JSON line per step on stdout:

    {"step": "list", "tools": [{"name": ..., "description": ...}, ...]}
    {"step": "call", "tool": NAME, "result": TEXT}
    {"step": "call", "tool": NAME, "error": {"code": N, "message": M}}   a JSON-RPC error
    {"step": "call", "tool": NAME, "error": {"code": null, "message": TEXT}}   a result with isError
    {"step": "touch"}

When the HTTP layer refuses a step (a 4xx/5xx answer whose body is not a JSON-RPC error, e.g. cordon's 403 with
x-cordon-reason, or a refused CONNECT) it prints {"step": STEP, "http_error": STATUS, "reason": X_CORDON_REASON
or null} and exits 3 ("step" is "initialize" when the handshake fails). Any other failure, including a step
taking over 60 s, is one line on stderr and exit 2. MCP_AGENT_DEBUG=1 shows the SDK's own logging on stderr.
"""

import json
import logging
import os
import re
import sys

import anyio
import httpx2
from mcp import ClientSession, MCPError
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client

STEP_TIMEOUT = 60


class HttpRefused(Exception):
    def __init__(self, status, reason):
        super().__init__(f"HTTP {status}")
        self.status, self.reason = status, reason


class Agent:
    def __init__(self):
        self.step = "initialize"
        self.refusal = None  # (status, x-cordon-reason) of the current step's last non-JSON 4xx/5xx POST answer

    async def on_response(self, response):
        ctype = response.headers.get("content-type", "")
        if response.request.method == "POST" and response.status_code >= 400 and not ctype.startswith("application/json"):
            self.refusal = (response.status_code, response.headers.get("x-cordon-reason"))

    def emit(self, **fields):
        print(json.dumps({"step": self.step, **fields}), flush=True)

    async def run_step(self, session, words):
        self.step, self.refusal = words[0], None
        try:
            with anyio.fail_after(STEP_TIMEOUT):
                await self.do_step(session, words)
        except MCPError as e:
            if self.refusal is not None:
                raise HttpRefused(*self.refusal) from e
            if self.step == "initialize":
                raise
            self.emit(tool=words[1], error={"code": e.code, "message": e.message})
        except TimeoutError:
            raise RuntimeError(f"step {self.step!r} took over {STEP_TIMEOUT} s") from None

    async def do_step(self, session, words):
        if words[0] == "initialize":
            await session.initialize()
        elif words[0] == "list":
            result = await session.list_tools()
            self.emit(tools=[{"name": t.name, "description": t.description} for t in result.tools])
        elif words[0] == "call":
            result = await session.call_tool(words[1], json.loads(words[2]))
            text = "".join(c.text for c in result.content if c.type == "text")
            if result.is_error:
                self.emit(tool=words[1], error={"code": None, "message": text})
            else:
                self.emit(tool=words[1], result=text)
        elif words[0] == "touch":
            open(words[1], "a").close()
            self.emit()

    async def main(self, url, steps):
        # What the SDK builds when given no client (httpx2 with trust_env on: HTTPS_PROXY, SSL_CERT_FILE), but with
        # reads capped at a step's timeout instead of 300 s, so the closing DELETE cannot hang either.
        timeout = httpx2.Timeout(30.0, read=STEP_TIMEOUT)
        hooks = {"response": [self.on_response]}
        if url.endswith("/sse"):

            def factory(headers=None, timeout=None, auth=None):
                return httpx2.AsyncClient(headers=headers, timeout=timeout, auth=auth, event_hooks=hooks)

            async with sse_client(url, httpx_client_factory=factory, sse_read_timeout=STEP_TIMEOUT) as (read, write):
                async with ClientSession(read, write) as session:
                    await self.run_step(session, ["initialize"])
                    for words in steps:
                        await self.run_step(session, words)
            return
        async with httpx2.AsyncClient(timeout=timeout, event_hooks=hooks) as client:
            async with streamable_http_client(url, http_client=client) as (read, write):
                async with ClientSession(read, write) as session:
                    await self.run_step(session, ["initialize"])
                    for words in steps:
                        await self.run_step(session, words)


def parse_step(arg):
    words = arg.split(" ", 2) if arg.startswith("call ") else arg.split(" ", 1)
    ok = words == ["list"] or (words[0] == "call" and len(words) == 3) or (words[0] == "touch" and len(words) == 2)
    if not ok:
        sys.exit(f"mcp_agent: bad step {arg!r} (list | call NAME JSON_ARGS | touch PATH)")
    if words[0] == "call":
        json.loads(words[2])
    return words


def leaves(exc):
    """The exceptions inside (nested) exception groups, where the SDK's task groups put them."""
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for e in exc.exceptions for leaf in leaves(e)]
    return [exc]


def main():
    logging.basicConfig(level=logging.DEBUG if os.environ.get("MCP_AGENT_DEBUG") else logging.CRITICAL)
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    steps = [parse_step(a) for a in sys.argv[2:]]
    agent = Agent()
    try:
        anyio.run(agent.main, sys.argv[1], steps)
    except Exception as exc:
        for e in leaves(exc):
            if isinstance(e, HttpRefused):
                agent.emit(http_error=e.status, reason=e.reason)
                sys.exit(3)
            # A CONNECT the proxy refused: httpx only keeps its status line ("403 Forbidden").
            if isinstance(e, httpx2.ProxyError) and (m := re.match(r"(\d{3})\b", str(e))):
                agent.emit(http_error=int(m.group(1)), reason=None)
                sys.exit(3)
        first = leaves(exc)[0]
        print(f"mcp_agent: step {agent.step!r}: {type(first).__name__}: {first}".replace("\n", " "), file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
