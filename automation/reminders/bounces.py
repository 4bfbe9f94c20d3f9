"""The mail service's bounces and complaints: the handler that applies them to the suppression
list, once the inbox has stored them (automation/intake/mail_service_views.py records, this module
acts).

A hard bounce, a spam complaint or an unsubscribe at the service stops every future reminder to
the address; a soft bounce or a deferral is temporary and changes nothing.
"""

from automation.intake.handling import Outcome, handles
from automation.intake.sources.mail_service import RECORDED_TYPES, SOURCE, Kind, TrackingEvent
from automation.models import Delivery
from automation.platform.notes import note
from automation.platform.pseudonyms import customer_refs, mask_email
from automation.reminders.suppression import Reason, suppress

# What each kind of event puts on the list as its reason; a kind not named here suppresses nothing.
SUPPRESSING = {
    Kind.HARD_BOUNCE: Reason.HARD_BOUNCE,
    Kind.COMPLAINT: Reason.SPAM_COMPLAINT,
    Kind.UNSUBSCRIBE: Reason.SERVICE_UNSUBSCRIBE,
}


@handles(SOURCE, *sorted(RECORDED_TYPES))
def handle_tracking_event(event: TrackingEvent, delivery: Delivery) -> Outcome:
    """Suppress the address for a hard bounce, a complaint or an unsubscribe; note the rest."""
    # The body names the recipient: link it by pseudonym, so `customers/redact` drops it.
    Delivery.objects.filter(pk=delivery.pk).update(**customer_refs(event.recipient))
    shown = {
        "service": event.service,
        "kind": note(f"kind_{event.kind.name.lower()}"),
        "address": mask_email(event.recipient),
    }
    reason = SUPPRESSING.get(event.kind)
    if reason is None:
        return Outcome(Delivery.Status.DONE, note("mail_not_suppressed", **shown))
    detail = f"{event.service}: {event.detail}" if event.detail else event.service
    if suppress(event.recipient, reason, detail):
        return Outcome(Delivery.Status.DONE, note("mail_suppressed", **shown))
    return Outcome(Delivery.Status.DONE, note("mail_suppressed_already", **shown))
