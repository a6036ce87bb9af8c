"""The read side: everything that rolls stored episodes up into what users read, imported by ``api/`` and
``views/`` alike (DESIGN §11). One module per question:

- :mod:`.scores`: scores, metrics and score cells of one evaluation, from one database aggregate (``/scores``,
  ``/metrics``, the Overview tab);
- :mod:`.agents`: agent-run rollups and the seed-004 status document (``/agents``, webhooks, the agent pages);
- :mod:`.comparisons`: paired comparisons of two evaluations or models (``/v1/comparisons``, the Compare page);
- :mod:`.regressions`: regression verdicts against a tag's baseline;
- :mod:`.charts`: the Plotly figures the dashboard draws.

The statistics themselves are pure functions in :mod:`evaluations.domain`; these modules read the database and
call them.
"""
