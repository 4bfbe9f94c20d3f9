"""API tokens with a brake on guessing, and the caller's address that brake and the login count.

DRF's throttles run after authentication, so a request with a wrong token never reaches them:
the failures are counted here, in Redis, which all gunicorn workers share (a per-process cache
would let each worker count on its own).
"""

import ipaddress
import logging

from django.conf import settings
from django.http import HttpRequest
from redis import Redis
from redis.exceptions import RedisError
from rest_framework.authentication import TokenAuthentication, get_authorization_header
from rest_framework.exceptions import AuthenticationFailed, Throttled
from rest_framework.request import Request

from automation.platform.queues import redis_client

logger = logging.getLogger(__name__)

FAILURES_KEY = "api-auth-failures:{address}"


def client_ip(request: HttpRequest) -> str:
    """The caller's address: REMOTE_ADDR, or behind TRUSTED_PROXY_COUNT proxies the address the
    outermost one saw.

    Each proxy appends its peer's address to X-Forwarded-For, so the N-th entry from the right
    was written by our own outermost proxy; anything left of it came from the caller and may be
    forged. With fewer entries than proxies, or a malformed one, REMOTE_ADDR stands. django-axes
    calls this too (AXES_CLIENT_IP_CALLABLE), so the login and the API count the same address.
    """
    remote = request.META.get("REMOTE_ADDR", "")
    proxies = settings.TRUSTED_PROXY_COUNT
    if proxies <= 0:
        return remote
    forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "")
    hops = [hop.strip() for hop in forwarded.split(",") if hop.strip()]
    if len(hops) < proxies:
        return remote
    try:
        return str(ipaddress.ip_address(hops[-proxies]))
    except ValueError:
        return remote


class ThrottledTokenAuthentication(TokenAuthentication):
    """DRF's token check, refused with 429 for an address that sent too many wrong tokens.

    While an address is over API_AUTH_FAILURE_LIMIT, its tokens are not looked up at all, a
    correct one included: answering a correct token would tell a guesser when it hit. Requests
    without a token (the browsable API's session) are not counted. If Redis is unreachable the
    check is skipped and logged: tokens are 160 random bits, the brake is a second line.
    """

    def authenticate(self, request: Request) -> tuple | None:
        header = get_authorization_header(request).split()
        if not header or header[0].lower() != self.keyword.lower().encode():
            return None  # no token offered: nothing to count
        address = client_ip(request)
        wait = self._blocked_for(address)
        if wait:
            raise Throttled(wait=wait)
        try:
            return super().authenticate(request)
        except AuthenticationFailed:
            self._count_failure(address)
            raise

    @staticmethod
    def _blocked_for(address: str) -> int:
        """Seconds until the address may try again; 0 while it is under the limit."""
        key = FAILURES_KEY.format(address=address)
        try:
            with redis_client().pipeline(transaction=False) as pipe:
                failures, ttl = pipe.get(key).ttl(key).execute()
        except RedisError as err:
            logger.warning("API token throttle skipped, Redis unreachable: %s", err)
            return 0
        if int(failures or 0) < settings.API_AUTH_FAILURE_LIMIT:
            return 0
        return max(int(ttl), 1)

    @staticmethod
    def _count_failure(address: str) -> None:
        """One more failure in the address's window; the window starts at its first failure."""
        key = FAILURES_KEY.format(address=address)
        window = settings.API_AUTH_FAILURE_WINDOW
        try:
            client: Redis = redis_client()
            with client.pipeline(transaction=True) as pipe:
                _, failures = pipe.set(key, 0, ex=window, nx=True).incr(key).execute()
        except RedisError as err:
            logger.warning("API token failure not counted, Redis unreachable: %s", err)
            return
        if failures == settings.API_AUTH_FAILURE_LIMIT:
            logger.warning(
                "%d wrong API tokens from %s within %d s: its tokens get 429 until the window ends",
                failures,
                address,
                window,
            )
