"""The merchant's set-up: one page per connection's state and test, and pickers for ids.

`checks` reads settings and the database only (the page renders while a vendor is down);
`probes` runs the test buttons against the vendors; `failures` turns every vendor failure into
our own German sentence per kind and logs the vendor's text with secrets masked; `pickers`
searches the shop (products with all their variants and stock) and the Ads account (ad groups
by name) for the watched product's form; `forms` holds that form and the ad group's; `views`
wires them into the admin (who may see and press what: automation/ui/page_access.py). Every
vendor call here is one a page waits on: each has VENDOR_INTERACTIVE_TIMEOUT seconds.
"""
