"""`{% if request.user|may_open:"setup" %}`: links only to pages the user may open."""

from django import template

from automation.ui import page_access

register = template.Library()


@register.filter
def may_open(user: page_access.AnyUser, page: str) -> bool:
    """Whether `user` may open the page named `page` (page_access.PAGES); a link hides if not."""
    return page_access.PAGES[page].allows(user)
