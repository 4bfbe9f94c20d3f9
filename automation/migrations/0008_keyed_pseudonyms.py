"""Replace the bare SHA-256 pseudonyms by keyed ones, or drop them.

Until now a row found by `customers/redact` carried `sha256("phone:" + digits)`, and the like
for the customer id and the e-mail address (also in the frequency cap's claim keys,
`reminder-to:<hash>`). Phone numbers and ids are few enough to be recovered from such a hash
by trying them all, so the pseudonyms are now HMACs under a key derived from SECRET_KEY
(automation.privacy.pseudonym).

SHA-256 is one-way: an old value cannot be turned into the new one by itself. It can only be
rebuilt from the plain value, where we still hold it:
- a delivery whose raw body is still stored names its customer in that body: every value in
  the body is tried, and where its old hash equals the stored one, the row gets the new
  pseudonym of that value (so nothing a redaction must find is lost);
- a checkout gets the same pseudonym through the bodies of any delivery (its id and phone
  appear in its own checkout bodies), and an address claim through the addresses that
  checkouts, decisions and suppressed addresses store in plain text.
Everything else is dropped: a pseudonym whose plain value we no longer hold links to nothing
we still keep (the body was erased or expired), and kept, it would only let someone recover
the phone number or id it was made from. That includes the `customers/redact` rows, which keep
no pseudonym at all from now on. An address claim that cannot be rebuilt is deleted: the
frequency cap then lets one more reminder through for an address we no longer store anyway.

A value that already is a keyed pseudonym of something in a body (a row written by the new code
before this migration ran) is kept as it is.
"""

import hashlib
import re

from django.db import migrations

from automation.platform.addresses import address_key
from automation.platform.pseudonyms import customer_id_ref, email_ref, phone_digits, phone_ref
from automation.intake.sources import load_body

CLAIM_PREFIX = "reminder-to:"
HEX64 = re.compile(r"[0-9a-f]{64}")
GID_NUMBER = re.compile(r"gid://shopify/Customer/(\d+)$")


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _legacy_email_refs(text: str) -> set[str]:
    """The old pseudonyms of a text that names an address: normalised, and the raw older one."""
    return {_sha(address_key(text) or text.strip().lower()), _sha(text.strip().lower())}


def _values(node):
    """Every scalar of a decoded JSON body."""
    if isinstance(node, dict):
        for value in node.values():
            yield from _values(value)
    elif isinstance(node, list):
        for value in node:
            yield from _values(value)
    elif node is not None:
        yield node


def _customer_ids(value) -> set[int]:
    if isinstance(value, bool):
        return set()
    if isinstance(value, int):
        return {value} if value > 0 else set()
    if isinstance(value, str):
        text = value.strip()
        if text.isdigit():
            return {int(text)}
        match = GID_NUMBER.match(text)
        if match:
            return {int(match.group(1))}
    return set()


def _learn(body: bytes, maps: dict[str, dict[str, str]]) -> None:
    """Add the old → new pseudonyms of every value in one body."""
    try:
        decoded = load_body(body)
    except (ValueError, RecursionError):
        return
    for value in _values(decoded):
        for customer_id in _customer_ids(value):
            new = customer_id_ref(customer_id)
            maps["customer_id_ref"][_sha(f"shopify-customer:{customer_id}")] = new
            maps["customer_id_ref"][new] = new
        if not isinstance(value, str):
            continue
        if "@" in value:
            new = email_ref(value)
            for old in _legacy_email_refs(value):
                maps["customer_ref"][old] = new
            maps["customer_ref"][new] = new
        digits = phone_digits(value)
        if digits:
            new = phone_ref(value)
            maps["phone_ref"][_sha(f"phone:{digits}")] = new
            maps["phone_ref"][new] = new


def rekey(apps, schema_editor):
    Delivery = apps.get_model("automation", "Delivery")
    CheckoutState = apps.get_model("automation", "CheckoutState")
    ReminderDecision = apps.get_model("automation", "ReminderDecision")
    SuppressedAddress = apps.get_model("automation", "SuppressedAddress")
    Claim = apps.get_model("automation", "Claim")

    maps: dict[str, dict[str, str]] = {"customer_ref": {}, "customer_id_ref": {}, "phone_ref": {}}
    linked = (
        Delivery.objects.exclude(customer_ref="", customer_id_ref="", phone_ref="")
        .filter(body__isnull=False)
        .values_list("body", flat=True)
    )
    for body in linked.iterator(chunk_size=200):
        _learn(body, maps)

    fields = ("customer_ref", "customer_id_ref", "phone_ref")
    Delivery.objects.filter(body__isnull=True).exclude(**dict.fromkeys(fields, "")).update(
        **dict.fromkeys(fields, "")
    )
    for model, names in ((Delivery, fields), (CheckoutState, fields[1:])):
        rows = model.objects.exclude(**{name: "" for name in names})
        for row in rows.only("pk", *names).iterator(chunk_size=500):
            changed = {name: maps[name].get(getattr(row, name), "") for name in names}
            if any(changed[name] != getattr(row, name) for name in names):
                model.objects.filter(pk=row.pk).update(**changed)

    addresses = set(CheckoutState.objects.exclude(email="").values_list("email", flat=True))
    addresses |= set(ReminderDecision.objects.exclude(email="").values_list("email", flat=True))
    addresses |= set(SuppressedAddress.objects.values_list("email", flat=True))
    claim_map: dict[str, str] = {}
    for email in addresses:
        inner = address_key(email) or email  # as automation.reminders.checkouts.address_claim_key
        new = email_ref(inner)
        for old in _legacy_email_refs(inner):
            claim_map[old] = new
        claim_map[new] = new
    for claim in Claim.objects.filter(key__startswith=CLAIM_PREFIX).iterator(chunk_size=500):
        ref = claim.key.removeprefix(CLAIM_PREFIX)
        if not HEX64.fullmatch(ref):
            continue
        new = claim_map.get(ref)
        if new is None:
            claim.delete()
        elif new != ref:
            if Claim.objects.filter(key=CLAIM_PREFIX + new).exists():
                claim.delete()  # the raw and the normalised spelling's claims became one
            else:
                Claim.objects.filter(pk=claim.pk).update(key=CLAIM_PREFIX + new)


class Migration(migrations.Migration):
    dependencies = [
        ("automation", "0007_alert_slots"),
    ]

    operations = [
        migrations.RunPython(rekey, migrations.RunPython.noop, elidable=True),
    ]
