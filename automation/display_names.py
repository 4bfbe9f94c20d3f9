"""How every page shows a vendor's object: by its name, with its id on hover.

Products, variants and ad groups are known to Shopify and Google Ads by numbers the merchant
does not recognise; their names come from the vendors (the pickers, the webhooks, the nightly
run) and are escaped like any text from outside. An object without a known name shows its id.
"""

from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.utils.translation import gettext


def named(name: str | None, ident: object) -> SafeString:
    """`name` with `id <ident>` as its hover text; without a name, the id itself."""
    if not name:
        return format_html("{}", ident)
    return format_html('<span title="{}">{}</span>', gettext("id %(id)s") % {"id": ident}, name)
