"""Shopify's published Admin GraphQL schema, to validate the documents our adapter sends.

Source: the introspection result Shopify published in github.com/Shopify/dev-mcp as
`data/admin_schema_2025-01.json.gz`, added in commit 441a0deaa19323159366139e07994d7b5bbc6a83
(2025-03-24) and unchanged (git blob 462bfd03cc06d5e304e78553140142dac38f7009) until commit
e80be805d3f4d128c0d1cb4d875059d48a84abea removed it (2025-07-16), when dev-mcp began to fetch
schemas at run time. 2025-01 is the newest Admin version that repository ever carried. ISC
licence, copyright 2025-present Shopify Inc.

How we get it: the same bytes ship in the npm package @shopify/dev-mcp@1.1.0 (its `data/`).
`make test` takes them before the tests run, like any other test dependency
(`python -m tests.support.shopify_schema`: `npm pack` of that one version, checked against
SCHEMA_SHA256, kept in var/, git-ignored); the tests themselves only read the file, offline.
SHOPIFY_ADMIN_SCHEMA names a local copy instead. The file itself is not committed: vendor data
fetched from elsewhere stays out of this repository.

Our pinned version is 2026-07 (automation/shopify/transport.API_VERSION). The fields
Shopify added after 2025-01 that our documents use are added by NEWER_FIELDS, each from
Shopify's own page; the schema test checks each is still missing from the published file, so a
newer file shrinks the list. A field removed after 2025-01 is not caught here.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path

from graphql import GraphQLSchema, build_client_schema, extend_schema, parse

SCHEMA_VERSION = "2025-01"
NPM_PACKAGE = "@shopify/dev-mcp@1.1.0"
PACKAGE_MEMBER = f"package/data/admin_schema_{SCHEMA_VERSION}.json.gz"
SCHEMA_SHA256 = "1057c5bca68fafa831bad094d0c42a236eebc255d74347eca8f9d2670ff60608"
CACHE = Path(__file__).resolve().parents[2] / "var" / "shopify" / Path(PACKAGE_MEMBER).name
NPM_DEADLINE = 180.0  # seconds for `npm pack` (about 650 kB)

# Fields of 2026-07 that 2025-01 lacks and our documents (or their variables) use.
# WebhookSubscription.uri and WebhookSubscriptionInput.uri, from 2025-10 on
# (https://shopify.dev/changelog/consolidate-webhook-graphql-surfaces,
# https://shopify.dev/docs/api/admin-graphql/2026-07/objects/WebhookSubscription,
# https://shopify.dev/docs/api/admin-graphql/2026-07/input-objects/WebhookSubscriptionInput).
NEWER_FIELDS = """
extend type WebhookSubscription { uri: String! }
extend input WebhookSubscriptionInput { uri: String }
"""


class SchemaUnavailable(Exception):
    """The published schema could not be had here (no npm, no registry, a wrong file)."""


def schema_file() -> Path:
    """The published introspection file: SHOPIFY_ADMIN_SCHEMA or the copy `make test` took."""
    override = os.environ.get("SHOPIFY_ADMIN_SCHEMA")
    if override:
        return _checked(Path(override))
    if not CACHE.exists():
        raise SchemaUnavailable(
            f"{CACHE} is missing: `make test` takes it from {NPM_PACKAGE} "
            "(python -m tests.support.shopify_schema)"
        )
    return _checked(CACHE)


def download() -> Path:
    """Take the schema from the npm package into var/ (once; a checked copy is kept)."""
    if CACHE.exists():
        try:
            return _checked(CACHE)
        except SchemaUnavailable:
            CACHE.unlink()  # a broken copy: take the package's again
    npm = shutil.which("npm")
    if not npm:
        raise SchemaUnavailable(f"npm is missing: it brings {NPM_PACKAGE}, which ships the schema")
    with tempfile.TemporaryDirectory() as folder:
        try:
            subprocess.run(
                [npm, "pack", NPM_PACKAGE, "--pack-destination", folder, "--silent"],
                check=True,
                capture_output=True,
                timeout=NPM_DEADLINE,
            )
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as err:
            raise SchemaUnavailable(f"`npm pack {NPM_PACKAGE}` failed: {err}") from err
        (archive,) = Path(folder).glob("*.tgz")
        with tarfile.open(archive) as tar:
            member = tar.extractfile(PACKAGE_MEMBER)
            if member is None:
                raise SchemaUnavailable(f"{NPM_PACKAGE} has no {PACKAGE_MEMBER}")
            data = member.read()
        _check(data, NPM_PACKAGE)
        CACHE.parent.mkdir(parents=True, exist_ok=True)
        partial = CACHE.with_suffix(".partial")
        partial.write_bytes(data)
        partial.replace(CACHE)
    return CACHE


def published_schema() -> GraphQLSchema:
    """The schema as Shopify published it for SCHEMA_VERSION.

    `assume_valid`: graphql-core 3.3 (like graphql-js 17) refuses a schema whose implementation
    fields are deprecated where the interface's are not, as Shopify's are; that rule is about
    their schema, not about our documents, which `graphql.validate` still checks in full.
    """
    with gzip.open(schema_file()) as file:
        introspection = json.load(file)
    return build_client_schema(introspection["data"], assume_valid=True)


def pinned_schema(published: GraphQLSchema) -> GraphQLSchema:
    """The published schema with the fields of our pinned version it lacks (NEWER_FIELDS)."""
    return extend_schema(published, parse(NEWER_FIELDS), assume_valid=True)


def _checked(path: Path) -> Path:
    try:
        _check(path.read_bytes(), str(path))
    except OSError as err:
        raise SchemaUnavailable(f"cannot read {path}: {err}") from err
    return path


def _check(data: bytes, source: str) -> None:
    digest = hashlib.sha256(data).hexdigest()
    if digest != SCHEMA_SHA256:
        raise SchemaUnavailable(f"{source} is not the published schema (sha256 {digest})")


if __name__ == "__main__":
    try:
        print(f"Shopify Admin schema {SCHEMA_VERSION}: {download()}")
    except SchemaUnavailable as err:
        # Not fatal here: the schema test skips without it (and fails under CI=true).
        print(f"Shopify Admin schema not taken: {err}")
