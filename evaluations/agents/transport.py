"""How the bridge reaches an endpoint: one request, retried on transient failures, timed, with its usage.

Three transports, each ``send(body) -> Reply`` raising :class:`EndpointError` on failure:

- :class:`OpenAIChat`: ``POST {url}/v1/chat/completions`` (``{url}/chat/completions`` when ``url`` ends in
  ``/v1``) through the official ``openai`` client (its own retries off), ``Authorization: Bearer <key>`` (no
  header without a key), ``additional_params`` merged into the JSON body. The body goes through the client's
  generic ``post`` (parsed into its ``ChatCompletion``): ``chat.completions.create`` walks every message through
  its TypedDict transform first, 2–3 ms per call on a 10-message conversation, half the bridge's budget.
- :class:`HttpAgent`: ``POST {url}`` with our plain JSON agent protocol (see :mod:`evaluations.agents.bridge`).
- :class:`RlmeshModel`: an ``rlmesh`` model server at ``tcp://host:port`` (``rlmesh.numpy.RemoteModel``).

:func:`call_with_retries` retries 429, 5xx, timeouts and connection errors up to ``max_retries`` times, sleeping
``Retry-After`` (seconds or an HTTP date) when the endpoint sent one, else ``backoff_seconds * 2**(n-1)`` capped at
``max_backoff_seconds``. A ``Retry-After`` longer than that cap is honoured by giving up (``rate_limited``), never by
calling back early. Other 4xx and malformed replies fail at once. Given a ``deadline`` (the episode's, on the
``time.monotonic`` clock), no attempt starts and no backoff sleeps past it, and each transport's ``send(body,
time_left)`` bounds its attempt by it: the HTTP timeout is the time left, and a connection still open when it runs
out is shut down (:func:`..outbound.cut_off_after`); the call then ends with failure :data:`DEADLINE`. Its stats split the call's time into
``latencyMs`` (waiting on the answer that was used) and ``retryMs`` (failed attempts plus ``backoffMs`` of sleep, of
which ``retryAfterMs`` the endpoint asked for) and name a final failure's ``failure``: ``rate_limited`` (the last
answer was 429) or ``endpoint_unavailable`` (5xx, timeouts, refused connections, bad replies, other 4xx).

:func:`read_usage` reads a reply's ``usage`` into one shape: ``prompt_tokens``, ``completion_tokens``,
``total_tokens``, ``cached_tokens`` (``prompt_tokens_details.cached_tokens``: a *part* of ``prompt_tokens``) and
``reasoning_tokens`` (``completion_tokens_details.reasoning_tokens``: a part of ``completion_tokens``), each None
when the endpoint did not send it; a reply without ``usage`` is ``None`` (missing, not zero).
"""

from __future__ import annotations

import email.utils
import json
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from .. import outbound

__all__ = ["DEADLINE", "FAILURE_KINDS", "USAGE_FIELDS", "EndpointConfig", "EndpointError", "HttpAgent", "OpenAIChat", "Reply",
           "RlmeshModel", "call_with_retries", "chat_url", "read_usage", "retry_after_seconds"]

#: What a call that never got an answer failed on (``stats["failure"]``).
FAILURE_KINDS = ("rate_limited", "endpoint_unavailable")
#: ``stats["failure"]`` of a call the episode's deadline stopped (its answer, if any came later, is never used).
DEADLINE = "deadline"
#: The token counts :func:`read_usage` returns (cached ⊂ prompt, reasoning ⊂ completion).
USAGE_FIELDS = ("prompt_tokens", "completion_tokens", "total_tokens", "cached_tokens", "reasoning_tokens")


@dataclass
class EndpointConfig:
    """The bridge's endpoint settings (``load(**config)``); ``key`` comes from the environment, never kwargs."""

    url: str
    model: str | None = None
    use_wrapper: bool = True
    send_tool_definitions: bool = True
    use_openai_chat: bool = True
    minimal_observation: bool | None = None
    additional_params: dict[str, Any] | None = None
    timeout_seconds: float = 60.0
    max_retries: int = 3
    backoff_seconds: float = 0.5
    max_backoff_seconds: float = 30.0
    key: str = field(default="", repr=False)
    #: The operator's allowance for private and loopback targets (``RLMESH_AGENT_ALLOW_PRIVATE_TARGETS``); off,
    #: every connection goes only to a globally reachable address checked as it connects (:mod:`..outbound`).
    allow_private: bool = False

    @property
    def protocol(self) -> str:
        """``rlmesh`` (a ``tcp://`` URL), ``openai-chat`` or ``http-agent``."""
        if self.url.startswith("tcp://"):
            return "rlmesh"
        return "openai-chat" if self.use_openai_chat else "http-agent"


class EndpointError(Exception):
    """A failed endpoint call. ``retryable``: worth another attempt; ``retry_after``: seconds the endpoint asked
    to wait (or None); ``status``: the HTTP status, if any; ``deadline``: the episode's time ran out during it."""

    def __init__(self, message: str, *, retryable: bool, retry_after: float | None = None, status: int | None = None,
                 deadline: bool = False):
        super().__init__(message)
        self.retryable, self.retry_after, self.status, self.deadline = retryable, retry_after, status, deadline


def _out_of_time(time_left: float | None) -> EndpointError:
    return EndpointError(f"the episode's time ran out during the call ({max(time_left or 0.0, 0.0):.1f} s were left); "
                         "its connection was closed", retryable=False, deadline=True)


def _attempt_timeout(cfg: EndpointConfig, time_left: float | None) -> float:
    return cfg.timeout_seconds if time_left is None else max(0.001, min(cfg.timeout_seconds, time_left))


def _ran_out(cut, time_left: float | None, t0: float) -> bool:
    """Whether a failed attempt failed because its time ran out (cut off, or timed out at the time left)."""
    return cut.is_set() or (time_left is not None and time.monotonic() - t0 >= time_left)


@dataclass
class Reply:
    """One endpoint answer: ``content`` text, OpenAI-shaped ``tool_calls`` dicts, ``usage`` (:func:`read_usage`, or
    None when the reply had none), ``status`` (HTTP), ``action`` (an rlmesh model's action text, or the HTTP agent's
    JSON object), ``reasoning`` (the message's ``reasoning_content``/``reasoning`` text, if the endpoint sent one)."""

    content: str | None = None
    tool_calls: list[dict] = field(default_factory=list)
    usage: dict | None = None
    status: int | None = None
    action: Any = None
    reasoning: str | None = None


def _count(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        return None
    return int(value)


def read_usage(usage: Any) -> dict | None:
    """A reply's ``usage`` object as :data:`USAGE_FIELDS` (ints, or None where absent or not a count); None when
    ``usage`` is not an object. Reads the OpenAI nesting (``prompt_tokens_details.cached_tokens``,
    ``completion_tokens_details.reasoning_tokens``) and, for the HTTP agent protocol, the same names at top level.
    ``cached_tokens`` stays a part of ``prompt_tokens``: nothing is added to anything."""
    if not isinstance(usage, dict):
        return None
    prompt = usage.get("prompt_tokens_details") if isinstance(usage.get("prompt_tokens_details"), dict) else {}
    completion = usage.get("completion_tokens_details") \
        if isinstance(usage.get("completion_tokens_details"), dict) else {}
    return {"prompt_tokens": _count(usage.get("prompt_tokens")),
            "completion_tokens": _count(usage.get("completion_tokens")),
            "total_tokens": _count(usage.get("total_tokens")),
            "cached_tokens": _count(prompt.get("cached_tokens", usage.get("cached_tokens"))),
            "reasoning_tokens": _count(completion.get("reasoning_tokens", usage.get("reasoning_tokens")))}

def retry_after_seconds(value: str | None) -> float | None:
    """Seconds from a ``Retry-After`` header (delta-seconds or an HTTP date); None when absent or unreadable."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _retryable_status(status: int) -> bool:
    return status == 429 or status >= 500


def _failure(exc: EndpointError) -> str:
    return "rate_limited" if exc.status == 429 else "endpoint_unavailable"


def call_with_retries(send: Callable[[], Reply], cfg: EndpointConfig, sleep: Callable[[float], None] = time.sleep,
                      deadline: float | None = None) -> tuple[Reply | None, dict[str, Any]]:
    """Call ``send`` until it succeeds, fails permanently or runs out of retries.

    Returns ``(reply or None, stats)``; stats (times in ms): ``attempts``; ``latencyMs``, the attempt whose answer
    was used (the last attempt when none was); ``retryMs``, time lost to retries: failed attempts' ``failedMs`` plus
    ``backoffMs`` (sleep between attempts), of which ``retryAfterMs`` was asked for by ``Retry-After`` headers
    (``retryAfterCount`` of them); ``failures``, one ``{"attempt", "status", "kind", "ms", "retryAfterS"}`` per
    failed attempt; ``error`` (None on success, else the last failure's message); ``failure`` (None, or a
    :data:`FAILURE_KINDS` word for a call that got no answer, or :data:`DEADLINE` when ``deadline``, a
    ``time.monotonic()`` instant, passed first: no attempt starts and no backoff sleeps past it); ``status`` (the
    last HTTP status).
    """
    stats: dict[str, Any] = {"attempts": 0, "latencyMs": 0.0, "retryMs": 0.0, "failedMs": 0.0, "backoffMs": 0.0,
                             "retryAfterMs": 0.0, "retryAfterCount": 0, "failures": [], "error": None,
                             "failure": None, "status": None}
    while True:
        if deadline is not None and time.monotonic() >= deadline:
            stats.update(error=str(_out_of_time(0.0)), failure=DEADLINE, latencyMs=0.0,
                         retryMs=stats["failedMs"] + stats["backoffMs"])
            return None, stats
        stats["attempts"] += 1
        t0 = time.perf_counter()
        try:
            reply = send()
        except EndpointError as exc:
            ms = (time.perf_counter() - t0) * 1000
            stats["failures"].append({"attempt": stats["attempts"], "status": exc.status, "kind": _failure(exc),
                                      "ms": round(ms, 3), "retryAfterS": exc.retry_after})
            stats.update(error=str(exc), status=exc.status, latencyMs=ms)
            too_long = exc.retry_after is not None and exc.retry_after > cfg.max_backoff_seconds
            if not exc.retryable or exc.deadline or stats["attempts"] > cfg.max_retries or too_long:
                if too_long and stats["attempts"] <= cfg.max_retries:
                    stats["error"] = (f"{exc} (Retry-After {exc.retry_after:g} s is longer than the bridge waits, "
                                      f"{cfg.max_backoff_seconds:g} s)")
                stats["failure"] = DEADLINE if exc.deadline else _failure(exc)
                # Every attempt failed: the last one is waiting too, but on an answer nobody used.
                stats["failedMs"] += ms
                stats["latencyMs"] = 0.0
                stats["retryMs"] = stats["failedMs"] + stats["backoffMs"]
                return None, stats
            stats["failedMs"] += ms
            if exc.retry_after is not None:
                delay = exc.retry_after
                stats["retryAfterMs"] += delay * 1000
                stats["retryAfterCount"] += 1
            else:
                delay = min(cfg.backoff_seconds * 2 ** (stats["attempts"] - 1), cfg.max_backoff_seconds)
            if deadline is not None:  # sleep at most to the deadline; the loop then ends the call
                delay = max(0.0, min(delay, deadline - time.monotonic()))
            sleep(delay)
            stats["backoffMs"] += delay * 1000
            continue
        stats.update(latencyMs=(time.perf_counter() - t0) * 1000, status=reply.status, error=None,
                     retryMs=stats["failedMs"] + stats["backoffMs"])
        return reply, stats


def chat_url(url: str) -> str:
    """The chat-completions URL for an endpoint base URL (``…/v1/chat/completions``)."""
    return _base_url(url) + "/chat/completions"


def _base_url(url: str) -> str:
    base = url.rstrip("/")
    return base if base.endswith("/v1") else base + "/v1"


class OpenAIChat:
    """OpenAI-compatible chat completions through the ``openai`` client (one client, one connection pool)."""

    def __init__(self, cfg: EndpointConfig):
        import openai

        import logging

        from openai.types.chat import ChatCompletion

        self.cfg = cfg
        self._openai = openai
        self._completion = ChatCompletion
        self._http = outbound.http_client(allow_private=cfg.allow_private, timeout=cfg.timeout_seconds)
        self._client = openai.OpenAI(api_key=cfg.key or "no-key", base_url=_base_url(cfg.url),
                                     timeout=cfg.timeout_seconds, max_retries=0, http_client=self._http)
        # Without a key, send no Authorization header at all (the client insists on one unless omitted per call).
        self._options = {} if cfg.key else {"headers": {"Authorization": openai.omit}}
        # One INFO line per request from the HTTP library is noise in a bridge's log (and costs time per step).
        logging.getLogger("httpx2").setLevel(logging.WARNING)

    def close(self) -> None:
        """Close the client's connection pool (idempotent)."""
        self._client.close()

    def send(self, body: dict[str, Any], time_left: float | None = None) -> Reply:
        """POST ``body`` as is (``model``, ``messages``, optional ``tools``, the ``additional_params``), cut off
        after ``time_left`` seconds when given (module docstring)."""
        openai = self._openai
        t0 = time.monotonic()
        options = {**self._options, "timeout": _attempt_timeout(self.cfg, time_left)}
        try:
            with outbound.cut_off_after(self._http, time_left) as cut:
                try:
                    completion = self._client.post("/chat/completions", body=body, cast_to=self._completion,
                                                   options=options)
                except (openai.APITimeoutError, openai.APIConnectionError):
                    if _ran_out(cut, time_left, t0):
                        raise _out_of_time(time_left) from None
                    raise
        except openai.APIStatusError as exc:
            raise EndpointError(outbound.status_error(exc.status_code, exc.response.text),
                                retryable=_retryable_status(exc.status_code), status=exc.status_code,
                                retry_after=retry_after_seconds(exc.response.headers.get("retry-after"))) from None
        except openai.APITimeoutError:
            raise EndpointError(f"timed out after {self.cfg.timeout_seconds:g} s", retryable=True) from None
        except openai.APIConnectionError as exc:
            if refused := outbound.refused(exc):
                raise EndpointError(str(refused), retryable=False) from None
            raise EndpointError(outbound.connection_error(exc), retryable=True) from None
        except openai.APIError as exc:  # a reply that is not a chat completion
            raise EndpointError(f"bad reply: {outbound.excerpt(str(exc))}", retryable=False) from None
        if not isinstance(completion, self._completion):
            raise EndpointError("bad reply: not a chat completion", retryable=False, status=200)
        message = completion.choices[0].message if completion.choices else None
        if message is None:
            raise EndpointError("bad reply: no choices", retryable=False, status=200)
        tool_calls = [tc.model_dump(exclude_none=True) for tc in (message.tool_calls or [])]
        usage = read_usage(completion.usage.model_dump(exclude_none=True)) if completion.usage else None
        extra = message.model_extra or {}
        reasoning = extra.get("reasoning_content") or extra.get("reasoning")
        return Reply(content=message.content, tool_calls=tool_calls, usage=usage, status=200,
                     reasoning=reasoning if isinstance(reasoning, str) else None)


class HttpAgent:
    """Our plain JSON agent protocol: one ``POST {url}`` per step (:func:`..outbound.http_client`, keep-alive)."""

    def __init__(self, cfg: EndpointConfig):
        import httpx2

        self.cfg = cfg
        self._httpx = httpx2
        self._session = outbound.http_client(allow_private=cfg.allow_private, timeout=cfg.timeout_seconds)
        self._headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if cfg.key:
            self._headers["Authorization"] = f"Bearer {cfg.key}"

    def send(self, body: dict[str, Any], time_left: float | None = None) -> Reply:
        """POST ``body``, cut off after ``time_left`` seconds when given (module docstring); the reply must be a JSON
        object (``{"tool", "arguments"}``, optional ``usage``)."""
        httpx = self._httpx
        t0 = time.monotonic()
        try:
            with outbound.cut_off_after(self._session, time_left) as cut:
                try:
                    resp = self._session.post(self.cfg.url, content=json.dumps(body), headers=self._headers,
                                              timeout=_attempt_timeout(self.cfg, time_left))
                except httpx.HTTPError:
                    if _ran_out(cut, time_left, t0):
                        raise _out_of_time(time_left) from None
                    raise
        except httpx.TimeoutException:
            raise EndpointError(f"timed out after {self.cfg.timeout_seconds:g} s", retryable=True) from None
        except httpx.HTTPError as exc:
            if refused := outbound.refused(exc):
                raise EndpointError(str(refused), retryable=False) from None
            raise EndpointError(outbound.connection_error(exc), retryable=True) from None
        if resp.status_code >= 300:  # a redirect is not followed: it is the endpoint's answer
            raise EndpointError(outbound.status_error(resp.status_code, resp.text), status=resp.status_code,
                                retryable=_retryable_status(resp.status_code),
                                retry_after=retry_after_seconds(resp.headers.get("Retry-After")))
        try:
            data = resp.json()
        except ValueError:
            return Reply(content=resp.text[:2000], status=resp.status_code)
        usage = read_usage(data.get("usage")) if isinstance(data, dict) else None
        return Reply(content=resp.text[:2000], usage=usage, status=resp.status_code, action=data)


class RlmeshModel:
    """An ``rlmesh`` model server (``tcp://host:port``): each episode's observations are forwarded unchanged.

    rlmesh 0.1.0's public ``RemoteModel`` only opens sessions against a live env, which the bridge does not have,
    so this uses its native model client (``PyModelClient``) with an env contract built from the observation's
    keys (``Text`` for strings, uint8 ``Box`` for arrays); one client (one model session) per episode.
    """

    def __init__(self, cfg: EndpointConfig):
        self.cfg = cfg
        self.address = cfg.url.removeprefix("tcp://").rstrip("/")
        self._contracts: dict[tuple, Any] = {}

    def _contract(self, observation: dict[str, Any]):
        import gymnasium as gym
        import numpy as np
        import rlmesh

        key = tuple(sorted((k, getattr(v, "shape", None)) for k, v in observation.items()))
        if key not in self._contracts:
            spaces = {k: gym.spaces.Box(0, 255, shape=v.shape, dtype=np.uint8) if isinstance(v, np.ndarray)
                      else gym.spaces.Text(min_length=1, max_length=1 << 22) for k, v in observation.items()}
            env = gym.Env()
            env.observation_space = gym.spaces.Dict(spaces)
            env.action_space = gym.spaces.Text(min_length=1, max_length=1 << 22)
            # Constructing the server only builds the contract; nothing is bound or served.
            self._contracts[key] = rlmesh.EnvServer(env, "127.0.0.1:0").env_contract
        return self._contracts[key]

    def open(self, observation: dict[str, Any], seed: int | None = None):
        """A model session for one episode (raises :class:`EndpointError` when the server cannot be reached)."""
        from rlmesh._load_native import load_native

        try:
            address = outbound.checked_address(self.cfg.url, allow_private=self.cfg.allow_private)
        except outbound.RefusedTarget as exc:
            raise EndpointError(f"rlmesh model server: {exc}", retryable=False) from None
        except OSError as exc:
            raise EndpointError(outbound.connection_error(exc, "rlmesh model server: cannot resolve"),
                                retryable=True) from None
        try:
            client = load_native("PyModelClient")(
                address, self._contract(observation), 1,
                connect_timeout_seconds=min(10.0, self.cfg.timeout_seconds),
                request_timeout_seconds=self.cfg.timeout_seconds)
            client.reset(seed)
        except (ConnectionError, TimeoutError, OSError, RuntimeError) as exc:
            raise EndpointError(outbound.connection_error(exc, "rlmesh model server"), retryable=True) from None
        return client

    def send(self, client: Any, observation: dict[str, Any]) -> Reply:
        """Forward ``observation`` through an episode's ``client``; the action comes back in ``Reply.action``."""
        import rlmesh

        bridge = rlmesh.numpy.RemoteModel._bridge
        try:
            action = bridge.decode(client.predict(bridge.encode(observation)))
        except (ConnectionError, TimeoutError, OSError, RuntimeError) as exc:
            raise EndpointError(outbound.connection_error(exc, "rlmesh model server"), retryable=True) from None
        if isinstance(action, bytes):
            action = action.decode("utf-8", "replace")
        return Reply(content=action if isinstance(action, str) else None, action=action)
