"""Encrypts the secrets the set-up page stores (client secrets, tokens): the one owner.

Keys come from SECRET_KEY and SECRET_KEY_FALLBACKS by HKDF-SHA256, one Fernet key each; a
MultiFernet encrypts with the current key and decrypts with any of them, so a SECRET_KEY
rotation (old key kept in the fallbacks) keeps every stored secret readable. A secret stored
under a key no longer configured cannot be read: `reveal` raises SecretUnreadable, and the
merchant enters it again.
"""

from __future__ import annotations

import base64
import functools

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.conf import settings

HKDF_INFO = b"elbkerzen connection settings v1"
"""Binds the derived keys to this use, so they differ from any other key made from SECRET_KEY."""


class SecretUnreadable(Exception):
    """A stored secret that none of the configured keys decrypts."""


@functools.lru_cache(maxsize=8)
def _fernet_key(secret_key: str) -> bytes:
    derived = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=HKDF_INFO).derive(
        secret_key.encode()
    )
    return base64.urlsafe_b64encode(derived)


def _box() -> MultiFernet:
    keys = [settings.SECRET_KEY, *settings.SECRET_KEY_FALLBACKS]
    return MultiFernet([Fernet(_fernet_key(key)) for key in keys if key])


def seal(plain: str) -> str:
    """`plain` encrypted with the current key (a Fernet token, ASCII); empty stays empty."""
    if not plain:
        return ""
    return _box().encrypt(plain.encode()).decode("ascii")


def reveal(token: str) -> str:
    """The plain text of a sealed secret; empty stays empty."""
    if not token:
        return ""
    try:
        return _box().decrypt(token.encode("ascii")).decode()
    except (InvalidToken, UnicodeError) as err:
        raise SecretUnreadable(
            "stored secret not readable with SECRET_KEY or its fallbacks"
        ) from err
