"""Every connection to a user-supplied URL goes only to an address checked as it connects (issue 19, item 1).

The tests stand in for the internet on loopback: 127.0.0.1 plays a *public* host (the address rule is patched
to pass exactly 127.0.0.1), 127.0.0.2 plays the platform's own network (refused, as every loopback address is),
and a patched resolver maps public-looking names onto them. Private targets are refused throughout
(``allow_private`` off), as on a production platform. Nothing leaves loopback.
"""

from __future__ import annotations

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx2
import pytest

from evaluations import webhooks
from evaluations.agents.bridge import ALLOW_PRIVATE_ENV, KEY_ENV, EndpointBridge
from evaluations.agents.judge import judge_rollout
from evaluations.agents.transport import EndpointConfig, EndpointError, HttpAgent, OpenAIChat, RlmeshModel
from evaluations.agents.validation import validate_endpoint_url
from evaluations.outbound import addresses, connect

PUBLIC, INTERNAL = "127.0.0.1", "127.0.0.2"
LEAK = "internal-secret-ami-id-0123456789"
CHAT = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


def completion(content: str = "ok") -> dict:
    return {"id": "c", "object": "chat.completion", "created": 0, "model": "m",
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}]}


class Server:
    """A loopback HTTP server on ``host`` answering every request with ``answer(path) -> (status, headers, body)``;
    ``calls`` keeps ``(path, headers)`` of each request it got."""

    def __init__(self, host: str, answer, port: int = 0):
        self.calls: list[tuple[str, dict]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _any(self):
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                outer.calls.append((self.path, {k.lower(): v for k, v in self.headers.items()}))
                status, headers, body = answer(self.path)
                data = body if isinstance(body, bytes) else json.dumps(body).encode()
                self.send_response(status)
                for k, v in {"Content-Type": "application/json", "Content-Length": str(len(data)), **headers}.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            do_POST = do_GET = _any  # noqa: N815

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer((host, port), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def internal():
    """The platform's own network: a metadata-like service on 127.0.0.2 whose answer must never be read back."""
    server = Server(INTERNAL, lambda path: (200, {}, {**completion(LEAK), "leak": LEAK}))
    yield server
    server.stop()


@pytest.fixture
def net(monkeypatch):
    """``net.names[name] = [answer, ...]``: the resolver answers a name with its list in turn (the last one
    repeats); other names resolve as usual. The address rule passes 127.0.0.1 (our 'public' host)."""
    real_getaddrinfo, real_refusal = socket.getaddrinfo, addresses.refusal

    class Net:
        names: dict[str, list[str]] = {}
        asked: list[str] = []

    def getaddrinfo(host, port, *args, **kwargs):
        if host in Net.names:
            Net.asked.append(host)
            answers = Net.names[host]
            address = answers.pop(0) if len(answers) > 1 else answers[0]
            return real_getaddrinfo(address, port, *args, **kwargs)
        return real_getaddrinfo(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    monkeypatch.setattr(addresses, "refusal", lambda a: None if str(a) == PUBLIC else real_refusal(a))
    Net.names, Net.asked = {"metadata.internal": [INTERNAL]}, []
    return Net


@pytest.fixture
def redirector(net, internal):
    """A 'public' endpoint at agent.example.com answering ``307`` to the internal service (by address and by a
    name that resolves there), on the path it was asked for."""
    targets = {"/v1/chat/completions": f"http://{INTERNAL}:{internal.port}/latest/meta-data",
               "/agent": f"http://metadata.internal:{internal.port}/latest/meta-data",
               "/hook": f"http://{INTERNAL}:{internal.port}/hook"}
    server = Server(PUBLIC, lambda path: (307, {"Location": targets[path]}, b""))
    net.names["agent.example.com"] = [PUBLIC]
    server.url = f"http://agent.example.com:{server.port}"
    yield server
    server.stop()


def cfg(url: str, **kw) -> EndpointConfig:
    return EndpointConfig(url=url, max_retries=0, timeout_seconds=5, **kw)


def assert_nothing_reached(internal, error: str) -> None:
    assert internal.calls == [] and LEAK not in error


# -- redirects ------------------------------------------------------------------------------------------------------
def test_the_chat_client_does_not_follow_a_redirect_into_the_platforms_network(redirector, internal):
    assert validate_endpoint_url(redirector.url) == []  # the endpoint itself is 'public'
    with pytest.raises(EndpointError) as caught:
        OpenAIChat(cfg(redirector.url)).send(CHAT)
    assert caught.value.status == 307 and not caught.value.retryable
    assert str(caught.value) == "HTTP 307 (redirects are not followed); empty reply"
    assert_nothing_reached(internal, str(caught.value))
    (path, headers), = redirector.calls
    assert path == "/v1/chat/completions" and headers["host"] == f"agent.example.com:{redirector.port}"


def test_the_http_agent_protocol_does_not_follow_a_redirect_either(redirector, internal):
    with pytest.raises(EndpointError) as caught:
        HttpAgent(cfg(redirector.url + "/agent", use_openai_chat=False)).send({"task": "t"})
    assert caught.value.status == 307 and "redirects are not followed" in str(caught.value)
    assert_nothing_reached(internal, str(caught.value))


def test_the_judge_is_not_redirected(redirector, internal):
    verifier, trace = judge_rollout(cfg(redirector.url), task="t", state={}, events=[])
    assert verifier["passed"] is None and "HTTP 307 (redirects are not followed)" in verifier["detail"]
    assert_nothing_reached(internal, json.dumps([verifier, trace]))


def test_a_webhook_is_not_redirected(redirector, internal, settings):
    settings.RLMESH_AGENT_ALLOW_PRIVATE_TARGETS = False
    status, error = webhooks._post(redirector.url + "/hook", "{}", {})
    assert (status, error) == (307, "HTTP 307 (redirects are not followed); empty reply")
    assert_nothing_reached(internal, error)


# -- DNS rebinding: the second answer differs from the first -----------------------------------------------------
@pytest.fixture
def rebinding(net, internal):
    """``rebind.example.com`` answers 127.0.0.1 ('public') first, 127.0.0.2 (internal) after, on the internal
    service's port: the submit-time check sees the first answer, the connection the second."""
    net.names["rebind.example.com"] = [PUBLIC, INTERNAL]
    return f"http://rebind.example.com:{internal.port}"


def refused_message(url_host: str = "rebind.example.com") -> str:
    return f"refused: {url_host} resolves to {INTERNAL}, which is loopback (127.0.0.0/8)"


@pytest.mark.parametrize("transport", [OpenAIChat, HttpAgent])
def test_a_rebound_name_is_refused_where_the_endpoint_is_called(transport, rebinding, internal, net):
    assert validate_endpoint_url(rebinding) == []
    with pytest.raises(EndpointError) as caught:
        transport(cfg(rebinding, use_openai_chat=transport is OpenAIChat)).send(CHAT)
    assert str(caught.value).startswith(refused_message()) and not caught.value.retryable
    assert_nothing_reached(internal, str(caught.value))
    assert net.asked == ["rebind.example.com", "rebind.example.com"]


def test_a_rebound_judge_is_refused(rebinding, internal):
    assert validate_endpoint_url(rebinding, path="judge.url") == []
    verifier, trace = judge_rollout(cfg(rebinding), task="t", state={}, events=[])
    assert verifier["passed"] is None and refused_message() in verifier["detail"] and trace["attempts"] == 1
    assert_nothing_reached(internal, json.dumps([verifier, trace]))


def test_a_rebound_webhook_is_refused(rebinding, internal, settings):
    settings.RLMESH_AGENT_ALLOW_PRIVATE_TARGETS = False
    status, error = webhooks._post(rebinding + "/hook", "{}", {})
    assert status is None and error.startswith(refused_message())
    assert_nothing_reached(internal, error)


def test_a_rebound_rlmesh_model_server_is_refused(rebinding, internal):
    url = rebinding.replace("http://", "tcp://")
    assert validate_endpoint_url(url) == []
    with pytest.raises(EndpointError) as caught:
        RlmeshModel(cfg(url)).open({"goal": "g"})
    assert refused_message() in str(caught.value) and not caught.value.retryable


# -- the bridge process, the operator's allowance, and what an error may quote --------------------------------------
def test_the_bridge_refuses_loopback_unless_the_platform_allows_it(monkeypatch, internal):
    url = f"http://{INTERNAL}:{internal.port}"
    monkeypatch.setenv(KEY_ENV, "sk-outbound-test-key")
    for allow, reached in (("false", 0), ("", 0), ("true", 1)):
        monkeypatch.setenv(ALLOW_PRIVATE_ENV, allow)
        bridge = EndpointBridge.from_config(url=url, max_retries=0, timeout_seconds=5)
        trace = json.loads(bridge.predict({"goal": "g", "dom": "[1] a"}))["trace"]
        assert len(internal.calls) == reached, allow
        if not reached:
            assert trace["error"].startswith(f"refused: {INTERNAL} resolves to {INTERNAL}, which is loopback")


def test_public_endpoints_still_work_through_the_checked_connection_and_no_proxy(net, internal, monkeypatch):
    server = Server(PUBLIC, lambda path: (200, {}, completion("fine")))
    net.names["agent.example.com"] = [PUBLIC]
    for name in ("HTTP_PROXY", "http_proxy", "ALL_PROXY"):  # a proxy would connect where nothing was checked
        monkeypatch.setenv(name, f"http://{INTERNAL}:{internal.port}")
    try:
        reply = OpenAIChat(cfg(f"http://agent.example.com:{server.port}")).send(CHAT)
    finally:
        server.stop()
    assert reply.content == "fine" and server.calls[0][1]["host"] == f"agent.example.com:{server.port}"
    assert internal.calls == []


def test_an_error_quotes_only_a_short_labelled_excerpt_of_the_reply(net):
    body = ("line one\n" + "x" * 500).encode()
    server = Server(PUBLIC, lambda path: (500, {"Content-Type": "text/plain"}, body))
    try:
        with pytest.raises(EndpointError) as caught:
            HttpAgent(cfg(f"http://{PUBLIC}:{server.port}", use_openai_chat=False)).send({})
    finally:
        server.stop()
    message = str(caught.value)
    assert message == 'HTTP 500; reply starts "line one\\u000a' + "x" * 111 + '…"'
    assert len(message) < 160


def test_a_name_with_one_internal_address_among_public_ones_is_refused(net, monkeypatch):
    real = socket.getaddrinfo

    def both(host, port, *a, **kw):  # 127.0.0.1 and 127.0.0.2 in one answer
        return real(PUBLIC, port, *a, **kw) + real(INTERNAL, port, *a, **kw) if host == "mixed.example.com" \
            else real(host, port, *a, **kw)

    monkeypatch.setattr(socket, "getaddrinfo", both)
    with pytest.raises(connect.RefusedTarget, match="resolves to 127.0.0.2"):
        connect.resolve("mixed.example.com", 80, allow_private=False)
    assert connect.resolve("mixed.example.com", 80, allow_private=True) == [PUBLIC, INTERNAL]


def self_signed(tmp_path, name: str):
    """A certificate and key for ``name`` (PEM files), signed by themselves."""
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now)
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False).sign(key, hashes.SHA256()))
    cert_path, key_path = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_path, key_path


def test_tls_runs_against_the_host_name_not_the_checked_address(net, tmp_path):
    """The socket goes to the checked address, but the TLS handshake names the URL's host (SNI) and the
    certificate is verified: a certificate no trusted authority signed is refused."""
    import ssl

    cert, key = self_signed(tmp_path, "agent.example.com")
    names: list[str | None] = []
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    context.sni_callback = lambda sock, name, ctx: names.append(name)
    listener = socket.create_server((PUBLIC, 0))
    port = listener.getsockname()[1]

    def serve():
        conn, _ = listener.accept()
        try:
            context.wrap_socket(conn, server_side=True).close()
        except (ssl.SSLError, OSError):
            pass
        finally:
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    net.names["agent.example.com"] = [PUBLIC]
    try:
        with pytest.raises(httpx2.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
            connect.http_client(allow_private=False, timeout=5).post(f"https://agent.example.com:{port}/agent")
    finally:
        thread.join(5)
        listener.close()
    assert names == ["agent.example.com"] and net.asked == ["agent.example.com"]
