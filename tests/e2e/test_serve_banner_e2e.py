"""The banner's lines work: ``serve`` prints one request to try per mounted protocol, and
each one, sent as printed, is answered by that protocol (and nothing unmounted is offered).

The lines are read off the real server's output and sent with httpx as curl would send them.
"""

from __future__ import annotations

import re
import shlex
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

Start = Any  # the start_server fixture's callable
TARGET = "samples.approval:workflow"


def tried(output: list[str]) -> list[list[str]]:
    """The banner's curl lines, each split as a shell would: read once the server logged its
    start-up, which it does after the whole banner (its lines arrive one by one)."""
    deadline = time.monotonic() + 60
    while not any("startup complete" in line for line in output):
        assert time.monotonic() < deadline, output
        time.sleep(0.05)  # polling the server's output, not waiting for an overlap
    return [shlex.split(line) for line in output if line.strip().startswith("curl ")]


def send(client: httpx.Client, argv: list[str]) -> httpx.Response:
    """``argv`` (``curl -s [-N] [-X POST] URL [-H H] [-d BODY]``) sent with httpx."""
    method, url, headers, body = "GET", "", {}, None
    words = iter(argv[1:])
    for word in words:
        if word == "-X":
            method = next(words)
        elif word == "-H":
            name, _, value = next(words).partition(":")
            headers[name.strip()] = value.strip()
        elif word == "-d":
            body = next(words)
        elif not word.startswith("-"):
            url = word
    return client.request(method, url, headers=headers, content=body)


@pytest.mark.parametrize(("adapters", "answers"), [
    ("native", {"/v1/conversations/demo/runs": "request_id"}),
    ("foundry", {"/responses": "mcp_approval_request"}),
    ("agui", {"/agui": "RUN_FINISHED"}),
    ("a2a", {"/a2a": "TASK_STATE_INPUT_REQUIRED"}),
    ("native,foundry,agui,a2a", {"/v1/conversations/demo/runs": "request_id",
                                 "/responses": "mcp_approval_request", "/agui": "RUN_FINISHED",
                                 "/a2a": "TASK_STATE_INPUT_REQUIRED"}),
])
def test_each_line_the_banner_offers_is_answered_by_its_protocol(
        start_server: Start, adapters: str, answers: dict[str, str]) -> None:
    server = start_server(TARGET, "memory:", "--adapters", adapters)
    lines = tried(server.output)
    offered = sorted({httpx.URL(argv[argv.index("-X") + 2]).path for argv in lines})
    assert offered == sorted(answers), server.output
    with httpx.Client(timeout=60) as client:
        for argv in lines:
            path = httpx.URL(argv[argv.index("-X") + 2]).path
            if "<request_id>" in argv[-1]:
                continue  # the native API's second line answers what the first returned
            response = send(client, argv)
            assert response.status_code == 200, (argv, response.text)
            assert answers[path] in response.text, response.text


def test_an_adapter_alone_leaves_the_native_api_out_but_keeps_the_probes(
        start_server: Start) -> None:
    server = start_server(TARGET, "memory:", "--adapters", "foundry")
    with httpx.Client(base_url=server.url, timeout=60) as client:
        assert client.get("/healthz").status_code == 200
        assert client.get("/readyz").status_code == 200
        assert client.get("/openapi.json").status_code == 404
        assert client.post("/v1/conversations/demo/runs", json={"message": "x"}
                           ).status_code == 404
    assert tried(server.output) and not any("/v1/" in argv[4] for argv in tried(server.output))


def test_the_readme_offers_what_the_banner_offers(start_server: Start) -> None:
    """The README's adapter table shows, for each protocol, the banner's own line."""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    table = readme.split("## Protocol adapters", 1)[1].split("\n## ", 1)[0]
    documented = sorted(re.findall(r"`(curl [^`]+)`", table))
    server = start_server(TARGET, "memory:", "--adapters", "a2a,agui,foundry")
    printed = sorted(shlex.join(argv).replace(server.url, "http://127.0.0.1:8000")
                     for argv in tried(server.output))
    documented = sorted(shlex.join(shlex.split(line)) for line in documented)
    assert documented == printed
