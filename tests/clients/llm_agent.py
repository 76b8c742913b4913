#!/usr/bin/env python3
"""The agent's side of the model-API tests: one call with an official SDK (PyPI `openai` or `anthropic`, pinned
in .ci/run), through whatever proxy the environment names, and one JSON line on stdout saying what the SDK got.

    llm_agent.py --sdk openai|anthropic --api chat|responses|embeddings|messages [--stream] --model M
                 --base-url URL --api-key KEY [--prompt TEXT] [--max-tokens N] [--header NAME:VALUE]...
                 [--timeout SECONDS] [--strict]

--sdk openai takes --api chat (client.chat.completions.create; streaming asks for
stream_options.include_usage), responses (client.responses.create) or embeddings (client.embeddings.create,
not streamed); --sdk anthropic takes --api messages (client.messages.create). --base-url is what the SDK is
given (for OpenAI with /v1, e.g. https://api.openai.com/v1; for Anthropic without, e.g.
https://api.anthropic.com). --max-tokens becomes max_completion_tokens, max_output_tokens or max_tokens
(Anthropic requires one: 64 when not given). --header adds a header to every request (repeatable). --strict
turns on the SDK's strict validation of answers against its types (a check of the test server's shapes; not
for embeddings, whose base64 answer the SDK decodes only after validating).

The SDKs send through httpx2, which takes HTTPS_PROXY / HTTP_PROXY / ALL_PROXY / NO_PROXY from the environment
and trusts the CA file named by SSL_CERT_FILE (or the directory SSL_CERT_DIR) instead of the system's. The
client has a --timeout (default 20 s) on every read and max_retries=0, so it never hangs nor calls twice.

Printed (one line, exit status 0 either way, so a test reads the line rather than the status):

    {"ok": true, "status": 200, "model": ..., "usage": {...as the SDK parsed it...}, "text": ..., "events": N}
        events: the stream events the SDK yielded (0 when not streaming); for embeddings "text" is "" and
        "vectors"/"dims" say what came back. For Anthropic streams the usage is message_start's with
        message_delta's fields laid over it, and "usage_start" is message_start's alone.
    {"ok": false, "status": 403, "error": {...the answer's JSON body...}, "message": ...}
        an answer with an error status (the SDK's APIStatusError); "error" is the whole body as sent (a refusal
        by cordon carries "reason"), or {"text": ...} when it is not JSON.
    {"ok": false, "status": null, "error": {"type": ..., "message": ...}, "events": N, "text": ..., "usage": ...}
        no answer, or a stream that broke off (connection refused, timeout, a stream cut short): what the SDK
        raised, and what had arrived before it.
"""

import argparse
import json
import sys


def dump(model):
    if model is None:
        return None
    return model.model_dump(mode="json", exclude_none=True)


def body_of(err):
    response = getattr(err, "response", None)
    if response is not None:
        try:
            return json.loads(response.text)
        except Exception:
            try:
                return {"text": response.text}
            except Exception:
                pass
    return err.body if isinstance(err.body, dict) else {"text": str(err.body)}


def openai_call(a, out):
    import openai

    client = openai.OpenAI(
        api_key=a.api_key,
        base_url=a.base_url,
        timeout=a.timeout,
        max_retries=0,
        default_headers=a.headers,
        # The SDK asks embeddings in base64 and decodes them after validating, so its strict check refuses
        # them from any server: strict validation is left off for embeddings.
        _strict_response_validation=a.strict and a.api != "embeddings",
    )
    errors = (openai.APIStatusError,)
    try:
        if a.api == "chat":
            kwargs = {"model": a.model, "messages": [{"role": "user", "content": a.prompt}]}
            if a.max_tokens is not None:
                kwargs["max_completion_tokens"] = a.max_tokens
            if not a.stream:
                r = client.chat.completions.create(**kwargs)
                out.update(model=r.model, usage=dump(r.usage), text=r.choices[0].message.content or "")
                return
            stream = client.chat.completions.create(**kwargs, stream=True, stream_options={"include_usage": True})
            out.update(text="", usage=None)
            for chunk in stream:
                out["events"] += 1
                out["model"] = chunk.model
                if chunk.choices and chunk.choices[0].delta.content:
                    out["text"] += chunk.choices[0].delta.content
                if chunk.usage is not None:
                    out["usage"] = dump(chunk.usage)
        elif a.api == "responses":
            kwargs = {"model": a.model, "input": a.prompt}
            if a.max_tokens is not None:
                kwargs["max_output_tokens"] = a.max_tokens
            if not a.stream:
                r = client.responses.create(**kwargs)
                out.update(model=r.model, usage=dump(r.usage), text=r.output_text)
                return
            out.update(text="", usage=None)
            for event in client.responses.create(**kwargs, stream=True):
                out["events"] += 1
                if event.type == "response.output_text.delta":
                    out["text"] += event.delta
                elif event.type in ("response.created", "response.completed"):
                    out["model"] = event.response.model
                    if event.response.usage is not None:
                        out["usage"] = dump(event.response.usage)
        elif a.api == "embeddings":
            if a.stream:
                raise SystemExit("--stream: embeddings are not streamed")
            r = client.embeddings.create(model=a.model, input=a.prompt)
            out.update(
                model=r.model,
                usage=dump(r.usage),
                text="",
                vectors=len(r.data),
                dims=len(r.data[0].embedding) if r.data else 0,
            )
        else:
            raise SystemExit(f"--api {a.api}: the openai SDK here takes chat, responses or embeddings")
    except errors as err:
        raise Status(err) from err


def anthropic_call(a, out):
    import anthropic

    if a.api != "messages":
        raise SystemExit(f"--api {a.api}: the anthropic SDK here takes messages")
    client = anthropic.Anthropic(
        api_key=a.api_key,
        base_url=a.base_url,
        timeout=a.timeout,
        max_retries=0,
        default_headers=a.headers,
        _strict_response_validation=a.strict,
    )
    kwargs = {
        "model": a.model,
        "max_tokens": a.max_tokens if a.max_tokens is not None else 64,
        "messages": [{"role": "user", "content": a.prompt}],
    }
    try:
        if not a.stream:
            r = client.messages.create(**kwargs)
            text = "".join(block.text for block in r.content if block.type == "text")
            out.update(model=r.model, usage=dump(r.usage), text=text)
            return
        out.update(text="", usage=None)
        for event in client.messages.create(**kwargs, stream=True):
            out["events"] += 1
            if event.type == "message_start":
                out["model"] = event.message.model
                out["usage_start"] = dump(event.message.usage)
                out["usage"] = dict(out["usage_start"])
            elif event.type == "content_block_delta" and event.delta.type == "text_delta":
                out["text"] += event.delta.text
            elif event.type == "message_delta":
                out["usage"] = {**(out["usage"] or {}), **dump(event.usage)}
    except anthropic.APIStatusError as err:
        raise Status(err) from err


class Status(Exception):
    """An answer with an error status, as the SDK raised it."""

    def __init__(self, err):
        super().__init__(str(err))
        self.err = err


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sdk", required=True, choices=["openai", "anthropic"])
    p.add_argument("--api", required=True, choices=["chat", "responses", "embeddings", "messages"])
    p.add_argument("--stream", action="store_true")
    p.add_argument("--model", required=True)
    p.add_argument("--base-url", required=True)
    p.add_argument("--api-key", required=True)
    p.add_argument("--prompt", default="Say hello to the tests")
    p.add_argument("--max-tokens", type=int)
    p.add_argument("--header", action="append", default=[], metavar="NAME:VALUE")
    p.add_argument("--timeout", type=float, default=20.0)
    p.add_argument("--strict", action="store_true")
    a = p.parse_args()
    a.headers = {}
    for h in a.header:
        name, sep, value = h.partition(":")
        if not sep or not name.strip():
            p.error(f"--header {h!r}: NAME:VALUE expected")
        a.headers[name.strip()] = value.strip()

    out = {"ok": True, "status": 200, "events": 0}
    try:
        (openai_call if a.sdk == "openai" else anthropic_call)(a, out)
    except Status as s:
        out = {
            "ok": False,
            "status": s.err.status_code,
            "error": body_of(s.err),
            "message": str(s.err),
        }
    except SystemExit:
        raise
    except Exception as err:
        cause = err.__cause__ or err.__context__
        out.update(
            ok=False,
            status=None,
            error={
                "type": type(err).__name__,
                "message": str(err),
                "cause": f"{type(cause).__name__}: {cause}"[:600] if cause else None,
            },
        )
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
