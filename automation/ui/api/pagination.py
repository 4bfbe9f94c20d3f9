"""List pages: `?limit=` and `?offset=`, with a ceiling so one request cannot ask for every row."""

from rest_framework import pagination

PAGE_SIZE = 100
MAX_PAGE_SIZE = 500


class LimitOffsetPagination(pagination.LimitOffsetPagination):
    """PAGE_SIZE rows unless `?limit=` asks for another number; never more than MAX_PAGE_SIZE."""

    default_limit = PAGE_SIZE
    max_limit = MAX_PAGE_SIZE
