"""Endpoint checks the API runs before a run starts (``[{path, message}]``)."""

from __future__ import annotations

import pytest

from evaluations.agents.validation import validate_additional_params, validate_endpoint, validate_endpoint_url


def paths(errors):
    return [e["path"] for e in errors]


@pytest.mark.parametrize("url", ["https://8.8.8.8/agent", "http://1.1.1.1:8080", "tcp://8.8.4.4:7000",
                                 "https://[2606:4700:4700::1111]/v1"])
def test_it_accepts_public_endpoints(url):
    assert validate_endpoint_url(url) == []


@pytest.mark.parametrize(("url", "message"), [
    ("", "must be a non-empty URL"),
    (None, "must be a non-empty URL"),
    ("http://[::1", "malformed URL"),
    ("http://1.1.1.1:99999/", "malformed URL"),
    ("https:///path", "malformed URL: no host"),
    ("ftp://1.1.1.1/", "scheme must be one of http, https, tcp (got 'ftp')"),
    ("1.1.1.1:80", "scheme must be one of"),
    ("https://user:pass@1.1.1.1/", "must not contain credentials"),
    ("https://token@1.1.1.1/", "must not contain credentials"),
    ("tcp://1.1.1.1", "an rlmesh model server URL is tcp://host:port"),
    ("tcp://1.1.1.1:7000/predict", "an rlmesh model server URL is tcp://host:port"),
])
def test_it_refuses_malformed_urls(url, message):
    errors = validate_endpoint_url(url)
    assert paths(errors) == ["endpoint.url"]
    assert errors[0]["message"].startswith(message)


@pytest.mark.parametrize(("url", "kind"), [
    ("http://127.0.0.1:8000/", "loopback (127.0.0.0/8)"),
    ("http://localhost:8000/", "loopback"),
    ("http://[::1]:8000/", "loopback (::1/128)"),
    ("http://10.1.2.3/", "private-use (10.0.0.0/8)"),
    ("http://192.168.0.10/", "private-use (192.168.0.0/16)"),
    ("http://169.254.169.254/latest/meta-data", "link-local (cloud metadata) (169.254.0.0/16)"),
    ("http://[::ffff:127.0.0.1]/", "IPv4-mapped (::ffff:0:0/96) wrapping 127.0.0.1, which is loopback"),
    ("http://0.0.0.0/", "'this host on this network' (0.0.0.0/32)"),
    ("tcp://172.16.0.5:7000", "private-use (172.16.0.0/12)"),
    # issue 22: classes Python 3.11's flags miss, and IPv4 addresses wrapped in IPv6 forms
    ("http://100.64.0.1/", "shared address space"),
    ("http://100.100.100.200/", "shared address space"),
    ("http://[fec0::1]/", "site-local (deprecated) (fec0::/10)"),
    ("http://[2002:7f00:1::]/", "6to4 (2002::/16) wrapping 127.0.0.1, which is loopback"),
])
def test_it_refuses_targets_that_are_not_globally_reachable_unless_allowed(url, kind):
    errors = validate_endpoint_url(url)
    assert paths(errors) == ["endpoint.url"] and f", which is {kind}" in errors[0]["message"]
    assert validate_endpoint_url(url, allow_private=True) == []


def test_additional_params_may_not_replace_what_the_bridge_sends():
    assert validate_additional_params(None) == []
    assert validate_additional_params({"temperature": 0.2, "max_tokens": 300}) == []
    assert validate_additional_params(["temperature"]) == [
        {"path": "endpoint.additional_params", "message": "must be a JSON object or null"}]
    errors = validate_additional_params({"model": "x", "temperature": 0, "messages": [], "tools": []})
    assert paths(errors) == ["endpoint.additional_params.model", "endpoint.additional_params.messages",
                             "endpoint.additional_params.tools"]
    assert errors[0]["message"] == "'model' is set by the bridge and cannot be overridden"


def test_it_checks_a_whole_endpoint_object_without_echoing_the_key():
    endpoint = {"url": "http://127.0.0.1:9/", "key": 42, "model": None, "use_wrapper": "no",
                "send_tool_definitions": False, "use_openai_chat": None, "minimal_observation": "auto",
                "additional_params": {"tool_choice": "none"}}
    errors = validate_endpoint(endpoint)
    assert paths(errors) == ["endpoint.url", "endpoint.key", "endpoint.use_wrapper", "endpoint.minimal_observation",
                             "endpoint.additional_params.tool_choice"]
    assert validate_endpoint({**endpoint, "key": "sk-secret"})[1:] == errors[2:]
    assert "sk-secret" not in str(validate_endpoint({**endpoint, "key": "sk-secret"}))
    ok = {"url": "https://1.1.1.1", "key": "k", "model": "gpt-4.1", "use_wrapper": False,
          "send_tool_definitions": False, "use_openai_chat": False, "minimal_observation": None,
          "additional_params": None}
    assert validate_endpoint(ok) == []
    assert validate_endpoint("https://1.1.1.1") == [{"path": "endpoint", "message": "must be a JSON object"}]
