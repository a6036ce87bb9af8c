"""Serve the scripted reference agent (an OpenAI-compatible chat endpoint plus the HTTP agent protocol)."""

from __future__ import annotations

from django.core.management.base import BaseCommand

from evaluations.agents.reference_agent import serve


class Command(BaseCommand):
    help = ("Serve the scripted MiniWoB reference agent: POST /v1/chat/completions, /chat/completions and "
            "/agent/step. Prints 'reference agent listening on http://HOST:PORT' once bound.")

    def add_arguments(self, parser):
        parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
        parser.add_argument("--port", type=int, default=0, help="port to bind (default 0: any free port)")

    def handle(self, *args, host: str, port: int, **options):
        def say(line: str) -> None:
            self.stdout.write(line)
            self.stdout.flush()

        serve(host, port, say)
