"""`{{ change.ad_group_name|named:change.ad_group_id }}`: a name with its id on hover."""

from django import template
from django.utils.safestring import SafeString

from automation.platform import display_names

register = template.Library()


@register.filter
def named(name: str | None, ident: object) -> SafeString:
    """The name (escaped) with `id <ident>` as its title; the id alone when no name is known."""
    return display_names.named(name, ident)
