"""The seed-004 Evaluations API for agents served at their owners' endpoints, under ``/agents`` (DESIGN §10).

One module per resource: ``tasks`` (the task catalog), ``runs`` (submit, status, cancel, transcripts),
``evaluations`` (list and read), ``outputs`` (a run's results bundle); ``serializers`` shapes every response.
Same authentication, error envelope and organization scoping as ``/v1``.
"""
