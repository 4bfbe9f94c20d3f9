"""Stock and the ads it controls: the one owner of "what status should this ad group have".

Owns the stock levels (with their stale guard), the catalogue they belong to (products,
variants, locations), watched products, THE rule for an ad group's status (`rule`, pure), the
one locked path that applies it (`apply.settle`), the merchant's manual state, the safety
brake and its held changes, and the nightly drift repair. Every caller (webhooks, a save in
the admin or the API, manual pause and release, held changes, promotion edges, the nightly
reconciliation) goes through `apply`.

May import: models, sources (typed events), handling (the handler contract), ads (sending),
alerts, rows, exceptions. Nothing here imports the admin, the API or the views.
"""
