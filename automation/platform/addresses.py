"""E-mail addresses, parsed once at the edge: one plain addr-spec in one spelling, or nothing.

`"Kim" <x@example.org>`, `<x@example.org>` and `"x"@example.org` were each mailed after
`x@example.org` had unsubscribed: suppression, claims and the frequency cap compared strings.
Every address a sender gives us passes `normalise_address` before it is stored; whatever does
not normalise is no address we mail ("invalid e-mail").

Local-part case: RFC 5321 (2.4) lets a receiving server treat `Kim@` and `kim@` as two mailboxes,
but mail providers do not, and a buyer who types `Kim@` once and `kim@` the next time is one
person. We mail the address as given, but suppression, claims and the cap compare
`address_key`, the whole address in lower case: an unsubscribe or a cap that misses a mailbox
is worse than one shared by two mailboxes that differ only in case. The unsubscribe token was
already made from the lower-cased address, so existing suppressions keep matching.
"""

import re
from email.errors import HeaderParseError
from email.headerregistry import Address
from email.utils import parseaddr

import idna

# RFC 5321 4.5.3.1.1: a local part has at most 64 octets; 4.5.3.1.3: a path at most 256 with
# its angle brackets, so an address at most 254.
MAX_LOCAL_PART_CHARS = 64
MAX_ADDRESS_CHARS = 254
# RFC 5322 3.2.3 `dot-atom` of ASCII `atext`: a local part that needs no quoting. One that does
# (`"a b"@…`, `"a,b"@…`) is refused: buyers do not have one, senders of a second address do.
_DOT_ATOM = re.compile(r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*\Z")
# Characters only a display name, a group, a list, a comment, a route or a domain literal needs
# (RFC 5322 3.2.3 `specials`, less `@`, `.` and the `"` of a quoted local part).
_NOT_IN_AN_ADDR_SPEC = frozenset("()<>[],;:\\")


def _domain(domain: str) -> str | None:
    """The domain in IDNA 2008 A-labels (RFC 5890; UTS 46 maps upper to lower case), or None.

    `idna` is the library `requests` uses for the same job. A domain literal (`[1.2.3.4]`), a
    single label and an all-numeric top-level label (an IP address) are refused.
    """
    try:
        ascii_domain = idna.encode(domain, uts46=True).decode("ascii")
    except (idna.IDNAError, UnicodeError):
        return None
    labels = ascii_domain.split(".")
    if len(labels) < 2 or labels[-1].isdigit():
        return None
    return ascii_domain


def normalise_address(raw: object) -> str | None:
    """`local@domain` with the domain lower-cased and IDNA-encoded, or None for anything else.

    None for a display name, angle brackets, several addresses, comments, whitespace, control
    or format characters, lone surrogates, a missing or empty part, a non-ASCII local part
    (it needs SMTPUTF8, which we cannot count on) and anything longer than RFC 5321 allows. A
    quoted local part that needs no quoting is unquoted (`"x"@example.org` → `x@example.org`);
    otherwise the local part is kept as given. The parsing is the standard library's RFC 5322
    parser (`email.headerregistry.Address(addr_spec=...)`), which refuses trailing text.
    """
    if not isinstance(raw, str):
        return None
    text = raw.strip()
    if not text or len(text) > MAX_ADDRESS_CHARS + 2:  # two for the quotes of a local part
        return None
    # isprintable() is False for control, format, surrogate, private-use and unassigned code
    # points and for every separator but the ASCII space, which isspace() catches.
    if any(not ch.isprintable() or ch.isspace() or ch in _NOT_IN_AN_ADDR_SPEC for ch in text):
        return None
    try:
        parsed = Address(addr_spec=text)
    except (ValueError, IndexError, HeaderParseError):  # defects are ValueErrors
        return None
    local = parsed.username
    if len(local) > MAX_LOCAL_PART_CHARS or not _DOT_ATOM.match(local):
        return None
    domain = _domain(parsed.domain)
    if domain is None:
        return None
    address = f"{local}@{domain}"
    return address if len(address) <= MAX_ADDRESS_CHARS else None


def address_key(raw: object) -> str | None:
    """The form suppression, claims and the frequency cap compare: normalised, lower case."""
    address = normalise_address(raw)
    return address.lower() if address else None


def identifying_address(raw: object) -> str | None:
    """The address a value names, for finding a customer's data again; never for mailing.

    Lenient where normalise_address is strict: `"Kim" <x@example.org>` is not mailed, but a
    redaction request or an unsubscribe for `x@example.org` must still find what it came with.
    """
    address = normalise_address(raw)
    if address is None and isinstance(raw, str):
        address = normalise_address(parseaddr(raw)[1])
    return address.lower() if address else None
