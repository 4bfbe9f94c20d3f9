"""The merchant's reminder text: its placeholders, how they are checked, how they are filled.

The merchant's text is text, never template code: placeholders are replaced in one pass by
plain string substitution, so neither the text nor a value put into it (a buyer's first name)
can reach Django's template engine or be substituted a second time.
"""

import re
from collections.abc import Callable, Iterable, Mapping

from django.core.exceptions import ValidationError
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

FIRST_NAME = "vorname"
SHOP = "shop"
BASKET = "warenkorb"
LINK = "link"
DISCOUNT_CODE = "rabattcode"
DISCOUNT_PERCENT = "rabatt"

PLACEHOLDERS: dict[str, str] = {
    FIRST_NAME: _("the buyer's first name (empty when unknown)"),
    SHOP: _("the shop's name"),
    BASKET: _("the basket: its articles, prices and total"),
    LINK: _("the link back to the basket"),
    DISCOUNT_CODE: _("the discount code (lines with it appear only in reminders with discount)"),
    DISCOUNT_PERCENT: _("the discount in percent, e.g. 10"),
}
"""Every placeholder the merchant may write, as `{name}`, with what it stands for."""

SUBJECT_PLACEHOLDERS = (FIRST_NAME, SHOP)
GREETING_PLACEHOLDERS = (FIRST_NAME, SHOP)
BODY_PLACEHOLDERS = tuple(PLACEHOLDERS)
BODY_REQUIRED = (LINK, DISCOUNT_CODE)
"""Without the link the buyer cannot reach the basket; without the code a discount reminder
would promise nothing."""
DISCOUNT_ONLY = (DISCOUNT_CODE, DISCOUNT_PERCENT)
"""A line holding one of these is left out of reminders without a discount."""

# `{anything}` on one line counts as a placeholder, so a misspelt `{Vorname}` or `{ link }` is
# refused rather than sent as it stands. Up to 40 characters: longer braces are prose.
_PLACEHOLDER = re.compile(r"\{([^{}\n]{0,40})\}")
_FILL = re.compile(r"([ \t]*)\{([^{}\n]{0,40})\}")

DEFAULT_SUBJECT = "Dein Warenkorb bei {shop} wartet auf dich"
DEFAULT_GREETING = "Hallo {vorname},"
DEFAULT_BODY = """du hast bei {shop} noch etwas in deinem Warenkorb liegen lassen:

{warenkorb}

Hier geht's direkt zurück zu deinem Warenkorb:
{link}

Mit dem Code {rabattcode} sparst du {rabatt} % auf deine Bestellung.

Wir freuen uns, wenn deine Kerzen bald bei dir brennen.

Herzliche Grüße aus Hamburg
Dein {shop}-Team"""


def placeholders_in(text: str) -> list[str]:
    """The names of the placeholders written in `text`, in order."""
    return [match.group(1) for match in _PLACEHOLDER.finditer(text or "")]


def placeholder_problems(
    text: str, allowed: Iterable[str], required: Iterable[str] = ()
) -> list[str]:
    """What is wrong with the placeholders of `text`, in German for the merchant; [] when fine."""
    allowed = tuple(allowed)
    listed = ", ".join(f"{{{name}}}" for name in allowed)
    problems = []
    for name in dict.fromkeys(placeholders_in(text)):
        if name not in allowed:
            problems.append(
                gettext("Unknown placeholder %(placeholder)s. Allowed here: %(allowed)s.")
                % {"placeholder": f"{{{name}}}", "allowed": listed}
            )
    found = set(placeholders_in(text))
    for name in required:
        if name not in found:
            problems.append(
                gettext("The text needs the placeholder %(placeholder)s.")
                % {"placeholder": f"{{{name}}}"}
            )
    return problems


def _validator(allowed: Iterable[str], required: Iterable[str] = ()) -> Callable[[str], None]:
    allowed, required = tuple(allowed), tuple(required)

    def validate(text: str) -> None:
        problems = placeholder_problems(text, allowed, required)
        if problems:
            raise ValidationError(problems)

    return validate


def validate_subject(text: str) -> None:
    """A model field validator: the subject may name the buyer and the shop."""
    _validator(SUBJECT_PLACEHOLDERS)(text)


def validate_greeting(text: str) -> None:
    """A model field validator: the greeting may name the buyer and the shop."""
    _validator(GREETING_PLACEHOLDERS)(text)


def validate_body(text: str) -> None:
    """A model field validator: every placeholder, and the link and code must be there."""
    _validator(BODY_PLACEHOLDERS, BODY_REQUIRED)(text)


def validate_header_text(text: str) -> None:
    """A model field validator for text that goes into a mail header (the sender's name):
    a line break there would start a header of the sender's choosing."""
    if any(ch in text for ch in "\r\n\x00") or any(not ch.isprintable() for ch in text):
        raise ValidationError(gettext("Line breaks and control characters are not allowed here."))


def fill(text: str, values: Mapping[str, str], literal: Callable[[str], str] = str) -> str:
    """`text` with every known placeholder replaced by its value, in one pass.

    `literal` converts the merchant's own text between the placeholders (`escape` for HTML;
    the values are then HTML already). A placeholder whose value is empty takes the spaces
    before it along ("Hallo {vorname}," becomes "Hallo," without a name); unknown
    placeholders (refused on save) stay as written.
    """
    out = []
    position = 0
    for match in _FILL.finditer(text):
        space, name = match.group(1), match.group(2)
        if name not in values:
            continue
        out.append(literal(text[position : match.start()]))
        if values[name]:
            out.append(literal(space) + values[name])
        position = match.end()
    out.append(literal(text[position:]))
    return "".join(out)


def mentions(line: str, names: Iterable[str]) -> bool:
    """Whether the line holds one of the named placeholders."""
    found = set(placeholders_in(line))
    return any(name in found for name in names)
