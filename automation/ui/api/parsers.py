"""The API's JSON parser: DRF's, with nesting too deep to decode refused as a 400."""

from rest_framework import parsers
from rest_framework.exceptions import ParseError


class JSONParser(parsers.JSONParser):
    """DRF's JSONParser turns only ValueError into a ParseError (rest_framework/parsers.py);
    Python's decoder raises RecursionError for nesting deeper than the interpreter's recursion
    limit, which would otherwise answer 500. No API field nests more than a few levels."""

    def parse(self, stream, media_type=None, parser_context=None):  # noqa: ANN001, ANN201 (DRF's signature)
        try:
            return super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise ParseError("JSON parse error - nested too deeply") from None
