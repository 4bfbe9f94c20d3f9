"""The merchant's set-up: one page per connection's state and test, and pickers for ids.

`checks` reads settings and the database only (the page renders while a vendor is down);
`probes` runs the test buttons against the vendors, turning every failure into a German
sentence; `pickers` searches the shop and the Ads account for the admin's autocomplete fields;
`forms` holds the watched item's form with those fields; `views` wires them into the admin.
"""
