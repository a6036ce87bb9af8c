"""No bytes of a peer in an error message but the one labelled, short excerpt (issue 28, item 3).

A raw socket server on loopback plays a service that is not an HTTP endpoint (or a broken one): a non-HTTP
banner, a response cut off in its header block by a malformed line, a binary banner. Whatever the chat endpoint,
the HTTP agent, the judge and a webhook delivery report about it quotes at most ``EXCERPT_CHARS`` characters of
what it sent, labelled ``peer sent "…"``; the library's own words around it are kept, its quoted bytes are not.
"""

from __future__ import annotations

import json
import re
import socket

import pytest

from evaluations import webhooks
from evaluations.agents.judge import judge_rollout
from evaluations.agents.transport import EndpointConfig, EndpointError, HttpAgent, OpenAIChat
from evaluations.outbound.connect import EXCERPT_CHARS
from tests.support.loopback import LoopbackServer

#: What each service sends; ``TAIL`` sits past the first 120 characters of the offending line.
TAIL = "tail-secret-7d41"
ANSWERS = {
    "garbage": b"SSH-2.0-OpenSSH_9.2p1 internal-banner " + b"x" * 200 + TAIL.encode() + b"\r\n\r\n",
    "half response": b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nthis line has no colon "
                     + b"y" * 200 + TAIL.encode() + b"\r\n\r\n",
    "binary banner": bytes(range(9)) + bytes(range(14, 256)) + b"\x00\xff" * 100 + TAIL.encode() + b"\r\n\r\n",
}
#: The line each answer breaks on (the one the HTTP library quotes), as text.
LINES = {name: data.split(b"\r\n")[2 if name == "half response" else 0].decode("utf-8", "replace")
         for name, data in ANSWERS.items()}


class RawServer(LoopbackServer):
    """A loopback TCP server that reads whatever comes, answers ``data`` and closes (one thread per connection)."""

    def __init__(self, data: bytes):
        self.data = data
        super().__init__()

    def handle(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(5)
            try:
                conn.recv(65536)
                conn.sendall(self.data)
            except OSError:
                pass


@pytest.fixture(params=list(ANSWERS))
def peer(request):
    server = RawServer(ANSWERS[request.param])
    server.name = request.param
    yield server
    server.stop()


def assert_only_an_excerpt(message: str, name: str) -> None:
    """``message`` is ``<what>: <Type>: <reason>; peer sent "<at most 120 characters of the line>"``."""
    assert TAIL not in message and "bytearray" not in message and "\\x" not in message, message
    match = re.fullmatch(r'(?P<words>[^"]*); peer sent (?P<quote>".*")', message)
    assert match, message
    assert match["words"].startswith("connection failed: RemoteProtocolError: illegal"), message
    sent = json.loads(match["quote"])  # the excerpt escapes as JSON does (\", \\, \uXXXX)
    assert len(sent) <= EXCERPT_CHARS + 1 and sent.endswith("…")
    assert LINES[name].startswith(sent[:-1].lstrip()[:40]), (sent, LINES[name][:60])


def cfg(port: int, **kw) -> EndpointConfig:
    return EndpointConfig(url=f"http://127.0.0.1:{port}", max_retries=0, timeout_seconds=5, allow_private=True, **kw)


@pytest.mark.parametrize("transport", [OpenAIChat, HttpAgent])
def test_an_endpoint_error_quotes_a_broken_peer_only_through_the_labelled_excerpt(peer, transport):
    with pytest.raises(EndpointError) as caught:
        transport(cfg(peer.port, use_openai_chat=transport is OpenAIChat)).send({"model": "m", "messages": []})
    assert caught.value.retryable
    assert_only_an_excerpt(str(caught.value), peer.name)


def test_the_judge_quotes_a_broken_peer_only_through_the_labelled_excerpt(peer):
    verifier, trace = judge_rollout(cfg(peer.port), task="t", state={}, events=[])
    assert verifier["passed"] is None
    assert verifier["detail"].startswith("the judge could not be reached: ")
    assert_only_an_excerpt(verifier["detail"].removeprefix("the judge could not be reached: "), peer.name)
    assert_only_an_excerpt(trace["error"], peer.name)


def test_a_webhook_delivery_logs_a_broken_peer_only_through_the_labelled_excerpt(peer, settings):
    settings.RLMESH_AGENT_ALLOW_PRIVATE_TARGETS = True
    status, error = webhooks._post(f"http://127.0.0.1:{peer.port}/hook", "{}", {})
    assert status is None
    assert_only_an_excerpt(error, peer.name)
