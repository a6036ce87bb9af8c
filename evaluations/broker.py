"""The embedded broker: kombu's SQLAlchemy transport (a table in a SQLite file), polled every
``CELERY_BROKER_POLLING_INTERVAL`` seconds instead of kombu's 1 s, so submit → first step stays under a second.

kombu passes every transport option of this transport to ``sqlalchemy.create_engine``, which refuses
``polling_interval``; the interval is therefore set on this subclass, which settings select for ``sqla+`` URLs.
"""

from __future__ import annotations

from django.conf import settings
from kombu.transport import sqlalchemy

__all__ = ["DatabaseTransport"]


class DatabaseTransport(sqlalchemy.Transport):
    """kombu's SQLAlchemy transport with the platform's polling interval (seconds)."""

    @property
    def polling_interval(self) -> float:  # read by kombu's virtual transport loop
        return settings.CELERY_BROKER_POLLING_INTERVAL

    @polling_interval.setter
    def polling_interval(self, value) -> None:
        pass  # kombu assigns transport_options['polling_interval'] here when given; the setting wins
