"""Dashboard views, one module per page family: full pages plus the htmx partials they swap, scoped to the active
organization (:mod:`evaluations.tenancy`). Every write goes through the same services as the API."""
