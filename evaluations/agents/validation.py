"""Checks the API runs on an agent endpoint before a run starts; each returns ``[{"path", "message"}]`` (empty: ok).

- :func:`validate_endpoint_url`: the URL parses; the scheme is ``http``, ``https`` or ``tcp`` (an ``rlmesh`` model
  server, ``tcp://host:port``); it has a host, a valid port (required for ``tcp``) and no credentials
  (``user:pass@``: keys go in ``endpoint.key``). Unless ``allow_private`` is passed, the host name is resolved
  (``socket.getaddrinfo``, every address it returns) and refused when any address is not globally reachable
  unicast (:func:`evaluations.outbound.refusal`: private, shared, loopback, link-local, documentation,
  multicast, reserved…, and IPv4 addresses wrapped in IPv6 forms), so a run cannot be pointed at the
  platform's own network. This is the early answer at submit; the same rule is applied again at every
  connection (:mod:`evaluations.outbound.connect`), so a DNS answer that changes later gains nothing.
- :func:`validate_endpoint`: the whole seed-004 ``endpoint`` object (types of every field, plus the two below).
- :func:`validate_key`: a key is sent in an HTTP header, so it must be printable ASCII (no newline or other
  control character, no leading or trailing space); a key that breaks the header would otherwise fail every
  request with an error quoting it.
- :func:`validate_additional_params`: a JSON object whose keys do not replace what the bridge itself sends
  (``model``, ``messages``, ``tools``, and ``tool_choice``/``functions``/``function_call``, which would
  change the tool protocol; ``stream``, which the bridge does not read).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from ..outbound.connect import RefusedTarget, resolve

__all__ = ["RESERVED_PARAMS", "validate_additional_params", "validate_endpoint", "validate_endpoint_url",
           "validate_key"]

#: ``additional_params`` keys that would replace or break what the bridge sends.
RESERVED_PARAMS: tuple[str, ...] = ("model", "messages", "tools", "tool_choice", "functions", "function_call",
                                    "stream")
SCHEMES = ("http", "https", "tcp")


def _err(path: str, message: str) -> dict[str, str]:
    return {"path": path, "message": message}


def validate_endpoint_url(url: Any, *, allow_private: bool = False, path: str = "endpoint.url") -> list[dict]:
    """Errors of an endpoint URL (see the module docstring); ``[]`` when it may be used.

    ``allow_private`` skips the address check (an operator setting, for endpoints on the platform's own network
    and for tests on loopback). Resolving the host can take as long as the system resolver does.
    """
    if not isinstance(url, str) or not url.strip():
        return [_err(path, "must be a non-empty URL")]
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError as exc:
        return [_err(path, f"malformed URL: {exc}")]
    if parts.scheme not in SCHEMES:
        return [_err(path, f"scheme must be one of {', '.join(SCHEMES)} (got {parts.scheme or 'none'!r})")]
    if parts.username is not None or parts.password is not None:
        return [_err(path, "must not contain credentials; pass the key as endpoint.key")]
    host = parts.hostname
    if not host:
        return [_err(path, "malformed URL: no host")]
    if parts.scheme == "tcp" and (port is None or parts.path not in ("", "/") or parts.query):
        return [_err(path, "an rlmesh model server URL is tcp://host:port, without a path")]
    if allow_private:
        return []
    try:
        resolve(host, port or 443, allow_private=False)
    except RefusedTarget as exc:
        return [_err(path, str(exc))]
    except (OSError, UnicodeError) as exc:
        return [_err(path, f"cannot resolve host {host!r}: {exc}")]
    return []


def validate_additional_params(params: Any, *, path: str = "endpoint.additional_params") -> list[dict]:
    """Errors of ``additional_params`` (merged into every chat request body): it must be null or a JSON object,
    and none of :data:`RESERVED_PARAMS` may be set (each such key is one error, path ``<path>.<key>``)."""
    if params is None:
        return []
    if not isinstance(params, dict):
        return [_err(path, "must be a JSON object or null")]
    errors = []
    for key in params:
        if not isinstance(key, str):
            errors.append(_err(path, "keys must be strings"))
        elif key in RESERVED_PARAMS:
            errors.append(_err(f"{path}.{key}", f"'{key}' is set by the bridge and cannot be overridden"))
    return errors


def validate_key(key: Any, *, path: str) -> list[dict]:
    """Errors of a bearer key (None or "" is no key): a string of printable ASCII (0x20–0x7E) without leading or
    trailing spaces. The message never quotes the key."""
    if key is None or key == "":
        return []
    if not isinstance(key, str):
        return [_err(path, "must be a string or null")]
    if key != key.strip():
        return [_err(path, "must not start or end with whitespace (a newline copied with the key?)")]
    if any(not 0x20 <= ord(c) <= 0x7E for c in key):
        return [_err(path, "must be printable ASCII: it is sent in the Authorization header")]
    return []


_FLAGS = ("use_wrapper", "send_tool_definitions", "use_openai_chat")


def validate_endpoint(endpoint: Any, *, allow_private: bool = False, path: str = "endpoint") -> list[dict]:
    """Errors of a whole seed-004 ``endpoint`` object (``url``, ``key``, ``model``, the three boolean flags,
    ``minimal_observation``, ``additional_params``): :func:`validate_endpoint_url` on ``url``, booleans where
    booleans belong (``minimal_observation`` may be null), ``key``/``model`` strings or null, and
    :func:`validate_additional_params`. Never echoes the key."""
    if not isinstance(endpoint, dict):
        return [_err(path, "must be a JSON object")]
    errors = validate_endpoint_url(endpoint.get("url"), allow_private=allow_private, path=f"{path}.url")
    errors += validate_key(endpoint.get("key"), path=f"{path}.key")
    if endpoint.get("model") is not None and not isinstance(endpoint["model"], str):
        errors.append(_err(f"{path}.model", "must be a string or null"))
    for name in _FLAGS:
        if name in endpoint and endpoint[name] is not None and not isinstance(endpoint[name], bool):
            errors.append(_err(f"{path}.{name}", "must be true or false"))
    value = endpoint.get("minimal_observation")
    if value is not None and not isinstance(value, bool):
        errors.append(_err(f"{path}.minimal_observation", "must be true, false or null"))
    errors += validate_additional_params(endpoint.get("additional_params"), path=f"{path}.additional_params")
    return errors
