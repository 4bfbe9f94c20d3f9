"""`{{ change|reason_shown }}`: a row's reason in the reader's language
(automation/platform/notes.py)."""

from django import template

from automation.platform import notes

register = template.Library()


@register.filter
def reason_shown(row: object) -> str:
    """The row's reason note rendered in the active language; its stored text without one."""
    return notes.reason_shown(row)
