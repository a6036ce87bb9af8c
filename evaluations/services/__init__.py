"""Write operations shared by the API, the dashboard and the workers (see STYLE.md: services)."""
