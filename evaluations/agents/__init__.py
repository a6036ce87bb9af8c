"""Agents served at their owners' endpoints, evaluated on interactive web tasks (seed 004, DESIGN §10).

- :mod:`.observation`: the message contract (how a page becomes text, how the conversation is laid out).
- :mod:`.tools`: the five tools (OpenAI function schemas) and the parsing of tool calls, used by the env and the bridge.
- :mod:`.validation`: endpoint checks for the API (URL, ``additional_params``), returning ``[{path, message}]``.
- :mod:`.bridge`: the endpoint bridge, an ``rlmesh.numpy.Model`` served like any model server.
- :mod:`.transport`: the bridge's three ways to reach an endpoint (chat completions, HTTP agent, rlmesh) and retries.
- :mod:`.reference_agent`: a scripted agent served as an OpenAI-compatible endpoint (tests, README example).

Nothing here imports Django; the env lives in :mod:`evaluations.prebuilt.miniwob`.
"""
