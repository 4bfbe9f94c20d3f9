"""What people see: the admin site and its ModelAdmins, the dashboard, the set-up page,
the REST API and the notice bar.

May import every feature; no feature imports ui.
"""
