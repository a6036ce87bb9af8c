"""Connections to user-supplied URLs (agent endpoints, judges, webhooks) that reach only checked addresses.

Every such connection is opened by :func:`http_client` (an ``httpx2`` client, the HTTP library the ``openai``
client is built on, passed to it as ``http_client=``) or, for ``tcp://`` rlmesh model servers, addressed by
:func:`checked_address`. The check happens **at the moment of connecting**, in the ``connect_tcp`` of the
client's ``httpcore2`` network backend (:class:`CheckedBackend`): the host is resolved (``socket.getaddrinfo``),
every address it returns is put to :func:`evaluations.outbound.addresses.refusal`, and the socket is opened to
one of those checked addresses, never to the name, so a DNS answer that changes between the check and the
connection (rebinding) cannot slip through. TLS still runs against the URL's host name (``httpcore2`` passes it
as ``server_hostname``: SNI and certificate verification), and the ``Host`` header is the URL's.

- **Redirects are not followed**: a ``3xx`` is the endpoint's answer (the client's ``follow_redirects`` is
  off, and the ``openai`` client only turns it on in its own default client, which is not used).
- **No proxy from the environment** (``trust_env=False``): a proxy would open the connection to an address the
  platform never checked.
- **A call can be cut off**: :func:`cut_off_after` shuts down (both directions) every connection of a client that
  is still open when its time is up, so a call blocked on a slow or dribbling peer returns at once and the peer
  sees the connection closed.
- ``allow_private`` (the operator's ``RLMESH_AGENT_ALLOW_PRIVATE_TARGETS``) skips the address rule, not the
  pinning: connections still go to the address just resolved.

A refused connection raises :class:`RefusedTarget` (an ``httpcore2.ConnectError``; ``httpx2`` reports it as an
``httpx2.ConnectError`` caused by it, and :func:`refused` finds it in any exception's cause chain). Nothing is
sent to a refused address, so no reply text can come from one.
"""

from __future__ import annotations

import ast
import re
import socket
import threading
import weakref
from contextlib import contextmanager
from typing import Any, Iterable, Iterator
from urllib.parse import urlsplit

import httpcore2
import httpx2

from ..domain.text import quoted
from . import addresses

__all__ = ["CheckedBackend", "RefusedTarget", "checked_address", "connection_error", "cut_off_after", "excerpt",
           "http_client", "refused", "resolve", "status_error"]

#: How much of a reply's text an error message may quote.
EXCERPT_CHARS = 120


class RefusedTarget(httpcore2.ConnectError):
    """A connection the address rule refused (permanent: retrying resolves the same name to the same kind of
    address). The message names the host, the address and the rule it broke."""


def resolve(host: str, port: int, *, allow_private: bool) -> list[str]:
    """The addresses of ``host`` in the resolver's order, each checked (unless ``allow_private``).

    Raises :class:`RefusedTarget` when any address is refused (a name that also points inside is not used at
    all), ``socket.gaierror`` when the name does not resolve."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    found = list(dict.fromkeys(str(info[4][0]) for info in infos))
    if not allow_private:
        for address in found:
            reason = addresses.refusal(address)
            if reason:
                raise RefusedTarget(f"refused: {host} resolves to {address}, which is {reason}; only globally "
                                    "reachable addresses may be connected to")
    return found


def refused(exc: BaseException | None) -> RefusedTarget | None:
    """The :class:`RefusedTarget` in ``exc``'s cause/context chain, or None."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, RefusedTarget):
            return exc
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return None


class _TrackedStream(httpcore2.NetworkStream):
    """A network stream (plain or TLS) that its backend can shut down from another thread (:meth:`shutdown`)."""

    def __init__(self, stream: httpcore2.NetworkStream, backend: CheckedBackend):
        self._stream, self._backend = stream, backend
        backend._track(self, True)

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._stream.read(max_bytes, timeout)

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._stream.write(buffer, timeout)

    def close(self) -> None:
        self._backend._track(self, False)
        self._stream.close()

    def start_tls(self, ssl_context, server_hostname: str | None = None,
                  timeout: float | None = None) -> httpcore2.NetworkStream:
        self._backend._track(self, False)  # the TLS stream owns the socket from here on
        return _TrackedStream(self._stream.start_tls(ssl_context, server_hostname, timeout), self._backend)

    def get_extra_info(self, info: str) -> Any:
        return self._stream.get_extra_info(info)

    def shutdown(self) -> None:
        sock = self._stream.get_extra_info("socket")
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except (OSError, AttributeError):  # already closed, or not a socket
            pass


class CheckedBackend(httpcore2.SyncBackend):
    """``httpcore2``'s synchronous backend, resolving and checking in ``connect_tcp`` (module docstring), and
    keeping its open connections so :meth:`shut_down` can cut them off."""

    def __init__(self, *, allow_private: bool):
        self.allow_private = allow_private
        self._open: set[_TrackedStream] = set()
        self._lock = threading.Lock()

    def _track(self, stream: _TrackedStream, opened: bool) -> None:
        with self._lock:
            (self._open.add if opened else self._open.discard)(stream)

    def shut_down(self) -> int:
        """Shut down every connection still open (a blocked read or write returns at once); how many there were."""
        with self._lock:
            streams = list(self._open)
        for stream in streams:
            stream.shutdown()
        return len(streams)

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                    socket_options: Iterable[Any] | None = None) -> httpcore2.NetworkStream:
        try:
            found = resolve(host, port, allow_private=self.allow_private)
        except (OSError, UnicodeError) as exc:
            raise httpcore2.ConnectError(f"cannot resolve {host}: {exc}") from exc
        error: Exception = httpcore2.ConnectError(f"{host} has no address")
        for address in found:  # each is a numeric address: create_connection does no second lookup
            try:
                return _TrackedStream(super().connect_tcp(address, port, timeout, local_address, socket_options), self)
            except httpcore2.ConnectError as exc:
                error = exc
        raise error


class _CheckedTransport(httpx2.HTTPTransport):
    def __init__(self, *, allow_private: bool):
        super().__init__(trust_env=False)
        self.backend = CheckedBackend(allow_private=allow_private)
        # httpx2's transport takes no network backend of its own; its connection pool (``httpcore2``) does.
        self._pool = httpcore2.ConnectionPool(ssl_context=httpx2.create_ssl_context(trust_env=False),
                                              network_backend=self.backend)


#: The backend of each client :func:`http_client` made (for :func:`cut_off_after`).
_BACKENDS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def http_client(*, allow_private: bool, timeout: float, headers: dict | None = None) -> httpx2.Client:
    """An ``httpx2.Client`` whose every connection goes to a checked address (module docstring): redirects not
    followed, no environment proxy, ``timeout`` seconds per connect/read/write."""
    transport = _CheckedTransport(allow_private=allow_private)
    client = httpx2.Client(transport=transport, timeout=timeout, follow_redirects=False, trust_env=False,
                           headers=headers)
    _BACKENDS[client] = transport.backend
    return client


@contextmanager
def cut_off_after(client: httpx2.Client, seconds: float | None) -> Iterator[threading.Event]:
    """Within the block, every connection of ``client`` (made by :func:`http_client`) still open after ``seconds``
    is shut down, so the call in progress fails at once (``httpx2`` raises a read or protocol error) and the peer
    sees the connection closed. Yields an event that is set when the cut-off happened; ``seconds`` None: never."""
    fired = threading.Event()
    if seconds is None:
        yield fired
        return
    backend: CheckedBackend = _BACKENDS[client]

    def cut() -> None:
        fired.set()
        backend.shut_down()

    timer = threading.Timer(max(0.0, seconds), cut)
    timer.daemon = True
    timer.start()
    try:
        yield fired
    finally:
        timer.cancel()


def checked_address(url: str, *, allow_private: bool) -> str:
    """``ip:port`` (``[ip]:port`` for IPv6) of the first checked address of a ``tcp://host:port`` URL's host, for
    clients that take an address instead of a URL (rlmesh's model client). Raises :class:`RefusedTarget` or
    ``OSError`` (``socket.gaierror``: the name does not resolve) as :func:`resolve` does."""
    parts = urlsplit(url)
    address = resolve(parts.hostname or "", parts.port or 0, allow_private=allow_private)[0]
    return f"[{address}]:{parts.port}" if ":" in address else f"{address}:{parts.port}"


def excerpt(text: str | bytes | None, label: str = "reply starts") -> str:
    """A short, labelled quote of what a peer sent, for an error message: ``reply starts "…"`` (``label``, then at
    most :data:`EXCERPT_CHARS` characters in quotes, controls escaped), or ``empty reply``. The one way an error
    message may quote a peer's bytes."""
    if isinstance(text, (bytes, bytearray)):
        text = bytes(text).decode("utf-8", "replace")
    text = (text or "").strip()
    return f"{label} {quoted(text, EXCERPT_CHARS)}" if text else "empty reply"


def status_error(status: int, text: str | bytes | None) -> str:
    """The error message of an HTTP error answer: ``HTTP 307 (redirects are not followed); reply starts "…"``."""
    note = " (redirects are not followed)" if 300 <= status < 400 else ""
    return f"HTTP {status}{note}; {excerpt(text)}"


#: A bytes value an HTTP library quotes in its message (h11: ``illegal header line: bytearray(b'…')``).
_QUOTED_BYTES = re.compile(r"(?:bytearray\((?P<a>b(?P<qa>['\"]).*(?P=qa))\)|(?P<b>b(?P<qb>['\"]).*(?P=qb)))", re.S)
#: How much of a library's own words (the message without the peer's bytes) an error keeps.
_REASON_CHARS = EXCERPT_CHARS


def connection_error(exc: BaseException, what: str = "connection failed") -> str:
    """The error message of a connection that broke before a whole HTTP answer came (a malformed status or header
    line, a half response, a non-HTTP service): ``connection failed: RemoteProtocolError: illegal header line;
    peer sent "…"``. It holds the exception's type, the library's reason (quoted bytes taken out, controls replaced,
    at most :data:`EXCERPT_CHARS` characters) and what the peer sent only as the labelled :func:`excerpt` (``peer
    sent``), so a service that is not the endpoint never has more than :data:`EXCERPT_CHARS` characters of its
    bytes shown. ``exc`` may be the HTTP client's exception (its cause, the protocol library's, is read when it has
    one); ``what`` starts the message."""
    inner = exc.__cause__ if exc.__cause__ is not None else exc
    message = str(inner)
    peer = ""
    match = _QUOTED_BYTES.search(message)
    if match:
        try:
            sent = ast.literal_eval(match["a"] or match["b"])
        except (SyntaxError, ValueError):
            sent = match.group()
        peer = excerpt(sent, label="peer sent") if sent.strip() else ""
        message = message[:match.start()].rstrip(" :")
    reason = "".join(c if c.isprintable() else "?" for c in " ".join(message.split()))
    reason = reason if len(reason) <= _REASON_CHARS else reason[:_REASON_CHARS] + "…"
    words = f"{what}: {type(inner).__name__}" + (f": {reason}" if reason else "")
    return f"{words}; {peer}" if peer else words
