"""The unsubscribe page a reminder links to: GET asks, POST (or RFC 8058 one-click) unsubscribes."""

import logging

from django.conf import settings
from django.core import signing
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed
from django.shortcuts import render
from django.views.decorators.csrf import csrf_exempt

from automation.platform.pseudonyms import mask_email
from automation.reminders import mail as reminder_mail
from automation.reminders import suppression

logger = logging.getLogger(__name__)


@csrf_exempt  # RFC 8058 one-click POSTs come without a CSRF token; the signed token protects it
def unsubscribe(request: HttpRequest, token: str) -> HttpResponse:
    """GET shows a confirmation page; POST (the button, or one-click) unsubscribes."""
    context = {"shop_name": settings.SHOP_NAME}
    try:
        email = reminder_mail.email_from_token(token)
    except signing.BadSignature:
        return render(
            request, "automation/unsubscribe.html", context | {"invalid": True}, status=400
        )
    context["email"] = email
    if request.method == "POST":
        # the address the token names, as the list stores it (an old link may name a spelling)
        suppression.suppress(email)
        logger.info("unsubscribed %s", mask_email(email))
        return render(request, "automation/unsubscribe.html", context | {"done": True})
    if request.method != "GET":
        return HttpResponseNotAllowed(["GET", "POST"])
    return render(request, "automation/unsubscribe.html", context)
