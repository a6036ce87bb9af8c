"""Prebuilt reference policies (pure numpy) for the classic gymnasium control tasks."""
