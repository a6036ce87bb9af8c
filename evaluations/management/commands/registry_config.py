"""Write the registry's config.yml (token auth through this platform, push events to it)."""

from pathlib import Path

from django.core.management.base import BaseCommand

from evaluations.services.registry import registry_config


class Command(BaseCommand):
    help = "Create the registry token-signing key if needed and write the Distribution registry config."

    def add_arguments(self, parser):
        parser.add_argument("path", help="where to write config.yml")

    def handle(self, *args, path, **options):
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(registry_config())
        self.stdout.write(path)
