"""Error types: each says how the sender or the job runner should react."""


class WebhookRejected(Exception):
    """A request we refuse before storing anything; `status` is the HTTP answer."""

    status = 400


class PayloadTooLarge(WebhookRejected):
    status = 413


class LengthRequired(WebhookRejected):
    """A body without Content-Length (chunked): RFC 9110 section 15.5.12."""

    status = 411


class SignatureInvalid(WebhookRejected):
    status = 401


class ShopNotAllowed(WebhookRejected):
    status = 403


class BadHeader(WebhookRejected):
    status = 400


class StripeSignatureInvalid(WebhookRejected):
    """Stripe's convention: a bad signature or timestamp is a 400 with the reason."""

    status = 400


class InvalidPayload(Exception):
    """Signed but unusable data: the delivery ends `invalid`, retrying cannot help."""


class PermanentError(Exception):
    """A failure retrying cannot fix: the delivery goes `dead` at once, with an alert."""


class TransientAdsError(Exception):
    """A Google Ads failure worth retrying (server hiccup, short-term rate limit)."""

    def __init__(self, message: str, *, retry_delay: float | None = None) -> None:
        super().__init__(message)
        self.retry_delay = retry_delay  # the server's suggested wait in seconds, if any


class PermanentAdsError(PermanentError):
    """A Google Ads failure retrying cannot fix (authentication, permission, unknown ad group)."""
