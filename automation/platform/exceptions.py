"""Error types: each says how the sender or the job runner should react."""

from typing import Any


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
    """A Google Ads failure worth retrying (server hiccup, short-term rate limit, a collision).

    `retry_delay` is the server's suggested wait in seconds, if it named one. `retry_in_job`
    is False when the wait should be longer than a job may block a worker (a rate limit
    without a suggested wait, the job's time budget spent): the job's RQ retries, minutes
    apart, take over instead of the adapter's in-job retries.
    """

    def __init__(
        self, message: str, *, retry_delay: float | None = None, retry_in_job: bool = True
    ) -> None:
        super().__init__(message)
        self.retry_delay = retry_delay
        self.retry_in_job = retry_in_job


class PermanentAdsError(PermanentError):
    """A Google Ads failure retrying cannot fix (authentication, permission, unknown ad group)."""


class AdGroupMissing(PermanentAdsError):
    """Google Ads says the ad group is gone: unknown to the account, or removed.

    Permanent like its parent, but more: every later change of this ad group fails the same way,
    so the caller marks it and skips it instead of alerting once per delivery. `kind` is
    NOT_FOUND or REMOVED (Google Ads refuses every operation on a removed ad group);
    `ad_group_id` is None when the failure was not tied to one ad group.
    """

    NOT_FOUND = "not_found"
    REMOVED = "removed"
    KINDS = frozenset({NOT_FOUND, REMOVED})

    def __init__(self, message: str, *, kind: str, ad_group_id: str | None = None) -> None:
        if kind not in self.KINDS:
            raise ValueError(f"kind must be one of {sorted(self.KINDS)}, got {kind!r}")
        super().__init__(message)
        self.kind = kind
        self.ad_group_id = ad_group_id

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle with the keyword arguments, which Exception's own reduce would drop."""
        return (_rebuild_ad_group_missing, (str(self), self.kind, self.ad_group_id))


def _rebuild_ad_group_missing(message: str, kind: str, ad_group_id: str | None) -> AdGroupMissing:
    return AdGroupMissing(message, kind=kind, ad_group_id=ad_group_id)
