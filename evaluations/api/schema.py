"""drf-spectacular extensions (imported from AppConfig.ready)."""

from django.core.validators import ProhibitNullCharactersValidator, RegexValidator
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.openapi import AutoSchema as SpectacularAutoSchema

#: A string without NUL (U+0000), which no supported database stores (domain.text.storable_text_problem).
NO_NUL_PATTERN = "^[^\\u0000]*$"
#: The same, and not blank once trimmed: at least one character that is neither whitespace (Python's
#: ``str.isspace``, which DRF's ``trim_whitespace`` strips and ``re``'s ``\\s`` matches) nor NUL.
NOT_BLANK_PATTERN = "^[^\\u0000]*[^\\s\\u0000][^\\u0000]*$"


class AutoSchema(SpectacularAutoSchema):
    """drf-spectacular's, and a request string field that refuses NUL characters (DRF's CharField does) says so
    with ``pattern``, so the schema calls no request valid that the API refuses for a NUL; one that trims
    whitespace and refuses a blank says that too (``NOT_BLANK_PATTERN``: ``"  "`` is blank once trimmed, which
    ``minLength: 1`` alone calls valid; a field case of the fuzzer, ``source`` of ``POST /v1/published-scores``)."""

    def _map_serializer_field(self, field, direction, bypass_extensions=False):
        schema = super()._map_serializer_field(field, direction, bypass_extensions)
        validators = getattr(field, "validators", [])
        refuses_nul = any(isinstance(v, ProhibitNullCharactersValidator) for v in validators)
        # A field with a regular expression of its own states it instead (drf-spectacular maps it after this).
        has_pattern = any(isinstance(v, RegexValidator) for v in validators)
        if direction == "request" and refuses_nul and not has_pattern and schema.get("type") == "string" and "pattern" not in schema:
            trimmed_not_blank = getattr(field, "trim_whitespace", False) and not getattr(field, "allow_blank", True)
            schema["pattern"] = NOT_BLANK_PATTERN if trimmed_not_blank else NO_NUL_PATTERN
        return schema


class BearerAuthenticationScheme(OpenApiAuthenticationExtension):
    target_class = "evaluations.auth.BearerAuthentication"
    name = "bearerAuth"

    def get_security_definition(self, auto_schema):
        return {"type": "http", "scheme": "bearer", "description": "An API key (rlm_…)."}


def query_rules(result, generator, request, public):
    """Postprocessing hook stating two rules of every query parameter: an optional one says
    ``allowEmptyValue: true`` (the API reads ``?status=``, ``?limit=``, as an unset select or text box sends them,
    as absent: :func:`evaluations.api.pagination.query_value`); a free string refuses NUL (``pattern``), as the
    filters' text fields do."""
    for methods in result.get("paths", {}).values():
        for operation in methods.values():
            for parameter in operation.get("parameters", []) if isinstance(operation, dict) else []:
                if parameter.get("in") != "query":
                    continue
                if not parameter.get("required"):
                    parameter["allowEmptyValue"] = True
                schema = parameter.get("schema", {})
                schema = schema.get("items", {}) if schema.get("type") == "array" else schema
                if schema.get("type") == "string" and not {"enum", "pattern"} & set(schema):
                    schema["pattern"] = NO_NUL_PATTERN
    return result

