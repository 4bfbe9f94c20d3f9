"""The staff dashboard: data.py reads the numbers (ORM only), charts.py draws the SVG charts,
views.py renders the page in the admin's frame."""
