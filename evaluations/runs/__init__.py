"""Running evaluations: the lifecycle of evaluations and shards, the shard loop, and the one module that sends
Celery messages (``dispatch``)."""
