"""Remote policy servers speaking openpi's websocket protocol (``serve_policy.py``: the π0/π0.5 releases, RoboArena,
DROID evaluations), bridged to rlmesh as a model the platform serves (``prebuilt/openpi-endpoint``).

- :mod:`.policy` — the rlmesh model: LIBERO observations mapped as openpi's LIBERO example maps them, the reply's
  action chunk replayed for ``replan_steps`` steps, the connection opened to checked addresses only.
"""
