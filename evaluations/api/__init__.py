"""The /v1 JSON API."""
