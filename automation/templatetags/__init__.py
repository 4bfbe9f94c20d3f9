"""Template filters of the staff pages (loaded with `{% load ... %}`)."""
